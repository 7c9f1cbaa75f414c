package checker

import (
	"sync"

	"github.com/lockchaos/lockchaos/history"
)

// LiveChecker checks a run while it is recorded: the history writer hands
// it every event (history.Writer.Tap) and a goroutine of its own streams
// them through a Stream, so a soak shows violations when they happen and
// the check at the end costs only the tail. It never slows the run: should
// the checker fall behind by more than its buffer, it stops and says so
// (Finish then reports no result and the run checks its file as usual).
type LiveChecker struct {
	st  *Stream
	ch  chan []history.Event
	buf []history.Event

	mu     sync.Mutex
	status Live
	behind bool // fed from under the writer's lock only
	done   chan struct{}
	closed sync.Once
}

// liveBatch events are handed over at a time; liveQueue batches may wait.
const (
	liveBatch = 1024
	liveQueue = 256
)

// StartLive starts a live checker.
func StartLive(o Options) *LiveChecker {
	o.every = 1e9
	l := &LiveChecker{st: NewStream(o), ch: make(chan []history.Event, liveQueue), done: make(chan struct{})}
	l.status.Verdict = Valid
	go l.loop()
	return l
}

func (l *LiveChecker) loop() {
	defer close(l.done)
	for b := range l.ch {
		for i := range b {
			l.st.Add(&b[i])
		}
		s := l.st.Live()
		l.mu.Lock()
		behind := l.status.Behind
		l.status = s
		l.status.Behind = behind
		l.mu.Unlock()
	}
}

// Add takes one event (a copy is kept). It is meant for history.Writer.Tap:
// events arrive in the file's order, one at a time.
func (l *LiveChecker) Add(e *history.Event) {
	if l.behind {
		return
	}
	l.buf = append(l.buf, *e)
	if len(l.buf) < liveBatch {
		return
	}
	select {
	case l.ch <- l.buf:
		l.buf = make([]history.Event, 0, liveBatch)
	default:
		l.behind = true
		l.buf = nil
		l.mu.Lock()
		l.status.Behind = true
		l.mu.Unlock()
	}
}

// Status is the live verdict so far.
func (l *LiveChecker) Status() Live {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// Finish checks what is left once the writer is closed (no Add after it)
// and returns the result, or nil when the live check fell behind or could
// not be exact (then check the history file).
func (l *LiveChecker) Finish() (*Result, string) {
	if !l.behind && len(l.buf) > 0 {
		l.ch <- l.buf
		l.buf = nil
	}
	l.Stop()
	switch {
	case l.behind:
		return nil, "the live check fell behind the run"
	case l.st.Inexact() != "":
		return nil, l.st.Inexact()
	}
	return l.st.Result(), ""
}

// Stop ends the checker's goroutine (idempotent; Finish calls it). Nothing
// may Add after it: detach it from the writer first (Tap(nil)).
func (l *LiveChecker) Stop() {
	l.closed.Do(func() { close(l.ch) })
	<-l.done
}
