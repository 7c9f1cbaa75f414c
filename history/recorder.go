package history

import (
	"math"
	"sync"
	"time"
)

// Recorder is the run clock plus the history sink, shared by the workload,
// the faults and the observer. All times in the history
// are Recorder.Now() values: ns since Start on the monotonic clock.
type Recorder struct {
	start time.Time
	w     *Writer // nil: recording off (bench overhead baseline)
	// clocks reads the host's wall clock (unix ns) and the run clock
	// together (nil: time.Now; tests set it).
	clocks func() (wall, run int64)

	mu sync.Mutex
	// drifts are the settings the host's wall clock has had against the
	// run clock, oldest first (the last driftsKept; the first, 0 at run
	// time 0, added by the first sample).
	drifts []drift
	// maxDrift is the largest |drift| seen (ns).
	maxDrift int64
}

// drift is one setting of the host's wall clock against the run clock
// (wall - start's wall - run, ns), and the run times it was first and last
// seen at.
type drift struct {
	d, first, last int64
}

const (
	// driftStep is the least change of the drift taken for a step of the
	// wall clock: the two clocks are read one after the other, some tens
	// of ns apart.
	driftStep = 20 * int64(time.Microsecond)
	// driftsKept bounds the settings remembered: a stamp is mapped soon
	// after it was made.
	driftsKept = 64
)

// NewRecorder starts the run clock now. w may be nil to record nothing.
func NewRecorder(w *Writer) *Recorder {
	return &Recorder{start: time.Now(), w: w}
}

// Now is ns since the run started.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Start is the run's start (wall clock with monotonic reading).
func (r *Recorder) Start() time.Time { return r.start }

// ToRun maps a wall-clock instant that has passed (a server's MONITOR
// stamp: unix time on the host's clock) to run ns.
//
// The host's wall clock is not the monotonic one: NTP, or a virtual machine
// resumed from a snapshot, steps it while a run goes on (a machine here
// moved it 9 ms in 2 s against its monotonic clock, and the command record,
// mapped by the start's offset, put commands after the replies to them). So
// the recorder samples the offset at every call and keeps the settings it
// has seen, each with the span it was seen in; t maps under the setting it
// was stamped in. A step falls between two samples: a stamp that fits both
// settings there (made just before the step or just after) takes the later
// of the two times, never one after now: a command mapped late stays
// within the record's slack after its reply; mapped early it would fall
// before the call that sent it.
func (r *Recorder) ToRun(t time.Time) int64 {
	rel := t.UnixNano() - r.start.UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.sampleLocked()
	best := int64(math.MinInt64)
	for i := len(r.drifts) - 1; i >= 0; i-- {
		g := r.drifts[i]
		c := rel - g.d
		// g held from after the previous setting was last seen until
		// before the next was first seen.
		lo, hi := int64(math.MinInt64), now
		if i > 0 {
			lo = r.drifts[i-1].last
		}
		if i+1 < len(r.drifts) {
			hi = r.drifts[i+1].first
		}
		if c > lo && c <= hi && c <= now && c > best {
			best = c
		}
		if i > 0 && best >= g.first {
			break // every older setting held before best
		}
	}
	if best == math.MinInt64 {
		// Under no setting seen (older than those kept, or a step the
		// samples missed): the current one's, not after now.
		best = min(rel-r.drifts[len(r.drifts)-1].d, now)
	}
	return best
}

// WallDrift is the farthest the host's wall clock had moved from the run
// clock, either way, since the run started, as of a ToRun call or now: 0
// on a host whose clocks agree.
func (r *Recorder) WallDrift() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sampleLocked()
	return time.Duration(r.maxDrift)
}

// sampleLocked reads both clocks, notes the drift, and returns the run
// time.
func (r *Recorder) sampleLocked() int64 {
	var wall, run int64
	if r.clocks != nil {
		wall, run = r.clocks()
	} else {
		now := time.Now()
		wall, run = now.UnixNano(), int64(now.Sub(r.start))
	}
	d := wall - r.start.UnixNano() - run
	r.maxDrift = max(r.maxDrift, d, -d)
	if len(r.drifts) == 0 {
		r.drifts = append(r.drifts, drift{})
	}
	cur := &r.drifts[len(r.drifts)-1]
	if diff := d - cur.d; diff <= driftStep && diff >= -driftStep {
		cur.last = max(cur.last, run)
		return run
	}
	if len(r.drifts) == driftsKept {
		r.drifts = append(r.drifts[:0], r.drifts[1:]...)
	}
	r.drifts = append(r.drifts, drift{d: d, first: run, last: run})
	return run
}

// Record appends e (no-op when recording is off).
func (r *Recorder) Record(e *Event) {
	if r.w != nil {
		r.w.Append(e)
	}
}

// Enabled reports whether events are kept.
func (r *Recorder) Enabled() bool { return r.w != nil }
