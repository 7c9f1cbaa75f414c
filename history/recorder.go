package history

import (
	"time"
)

// Recorder is the run clock plus the history sink, shared by the workload,
// the faults and the observer. All times in the history
// are Recorder.Now() values: ns since Start on the monotonic clock.
type Recorder struct {
	start time.Time
	w     *Writer // nil: recording off (bench overhead baseline)
}

// NewRecorder starts the run clock now. w may be nil to record nothing.
func NewRecorder(w *Writer) *Recorder {
	return &Recorder{start: time.Now(), w: w}
}

// Now is ns since the run started.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Start is the run's start (wall clock with monotonic reading).
func (r *Recorder) Start() time.Time { return r.start }

// ToRun maps a wall-clock instant to run ns.
func (r *Recorder) ToRun(t time.Time) int64 { return int64(t.Sub(r.start)) }

// Record appends e (no-op when recording is off).
func (r *Recorder) Record(e *Event) {
	if r.w != nil {
		r.w.Append(e)
	}
}

// Enabled reports whether events are kept.
func (r *Recorder) Enabled() bool { return r.w != nil }
