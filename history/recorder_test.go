package history

import (
	"testing"
	"time"
)

// fakeClocks is a host whose wall clock the test steps against the run
// clock.
type fakeClocks struct {
	start      time.Time
	run, drift time.Duration
}

func (f *fakeClocks) read() (int64, int64) {
	return f.start.UnixNano() + int64(f.run+f.drift), int64(f.run)
}

// stamp is what the wall clock read at run time at, under drift d.
func (f *fakeClocks) stamp(at, d time.Duration) time.Time { return f.start.Add(at + d) }

func newFake() (*Recorder, *fakeClocks) {
	f := &fakeClocks{start: time.Unix(1_800_000_000, 0)}
	r := NewRecorder(nil)
	r.start, r.clocks = f.start, f.read
	return r, f
}

// A host whose wall clock is stepped during the run (NTP, a resumed
// virtual machine): a server stamp maps to the run time it was made at, not
// to where the start's wall clock would put it.
func TestToRunFollowsAWallClockStep(t *testing.T) {
	r, f := newFake()
	ms := time.Millisecond
	at := func(run time.Duration) { f.run = run; r.WallDrift() } // a sample
	at(500 * ms)
	at(990 * ms)
	// Between 990 and 1010 ms the wall clock is stepped 9 ms ahead.
	f.drift = 9 * ms
	at(1010 * ms)
	at(2000 * ms)

	cases := []struct {
		name      string
		madeAt, d time.Duration
		want      time.Duration
	}{
		{"before the step, read long after", 700 * ms, 0, 700 * ms},
		{"just before the step", 985 * ms, 0, 985 * ms},
		{"after the step", 1500 * ms, 9 * ms, 1500 * ms},
		// Made at 1000 ms after the step, its stamp also fits the old
		// setting at 1009 ms, still before the new one was first seen:
		// the later time.
		{"inside the step's span", 1000 * ms, 9 * ms, 1009 * ms},
	}
	for _, c := range cases {
		if got := time.Duration(r.ToRun(f.stamp(c.madeAt, c.d))); got != c.want {
			t.Errorf("%s: ToRun = %v, want %v", c.name, got, c.want)
		}
	}
	if got := r.WallDrift(); got != 9*ms {
		t.Errorf("WallDrift = %v, want 9ms", got)
	}
	// Stepped back again: the largest drift seen stays.
	f.drift = 0
	at(2100 * ms)
	if got := r.WallDrift(); got != 9*ms {
		t.Errorf("WallDrift after the clocks agree again = %v, want the 9ms seen", got)
	}
	if got := time.Duration(r.ToRun(f.stamp(2050*ms, 0))); got != 2050*ms {
		t.Errorf("after the step back: ToRun = %v, want 2.05s", got)
	}
	// Never after now.
	if got := time.Duration(r.ToRun(f.stamp(2200*ms, 0))); got != 2100*ms {
		t.Errorf("a stamp from the future: ToRun = %v, want now (2.1s)", got)
	}
}

// On a host whose clocks agree the mapping is the start's offset, and
// jitter between the two clock reads is no step.
func TestToRunOnAgreeingClocks(t *testing.T) {
	r, f := newFake()
	for i := 1; i <= 100; i++ {
		f.run = time.Duration(i) * time.Millisecond
		f.drift = time.Duration(i%3) * 50 * time.Nanosecond
		if got, want := time.Duration(r.ToRun(f.stamp(f.run-time.Millisecond, 0))), f.run-time.Millisecond; got != want {
			t.Fatalf("ToRun = %v, want %v", got, want)
		}
	}
	if len(r.drifts) != 1 {
		t.Errorf("%d drift settings kept, want 1 (jitter is no step)", len(r.drifts))
	}
	if got := r.WallDrift(); got > time.Microsecond {
		t.Errorf("WallDrift = %v on agreeing clocks", got)
	}
}
