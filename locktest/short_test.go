package locktest

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/scenarios"
)

// -short shortens every catalog scenario to a run that still validates:
// every scheduled firing (every × count included) fits inside it.
func TestShortDurationKeepsScenariosValid(t *testing.T) {
	all, err := scenarios.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		short := *s
		short.Duration = shortDuration(s)
		if err := short.Validate(); err != nil {
			t.Errorf("%s shortened to %v: %v", s.Name, short.Duration, err)
		}
		// A fault that repeats until the end keeps three firings (or the
		// whole run): one missed moment must not decide a short run.
		for i, f := range s.Faults {
			if f.Every > 0 && f.Count == 0 && short.Duration < s.Duration && f.At+2*f.Every+f.Duration > short.Duration {
				t.Errorf("%s shortened to %v: faults[%d] (at %v, every %v) fires fewer than three times", s.Name, short.Duration, i, f.At, f.Every)
			}
			// A firing held back for a client's point leaves each client
			// a whole cycle to reach it.
			cycle := s.Workload.Hold.Max + s.Workload.Think.Max
			if f.When != "" && short.Duration < s.Duration && f.At+time.Duration(s.Workload.Clients)*cycle > short.Duration {
				t.Errorf("%s shortened to %v: faults[%d] (at %v, when %q) leaves no cycle of every client to trigger it", s.Name, short.Duration, i, f.At, f.When)
			}
		}
	}
}
