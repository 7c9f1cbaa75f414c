package locktest

import (
	"testing"

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
	}
}
