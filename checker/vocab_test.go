package checker

import (
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// Every fault kind is either named by a cause (causeFaults) or listed with
// why none names it (uncaused), so a new kind cannot be silently left out
// of the incidents' explanations; and nothing names a kind that does not
// exist.
func TestEveryFaultKindIsExplained(t *testing.T) {
	named := map[string]bool{}
	for cause, kinds := range causeFaults {
		for _, k := range kinds {
			if !slices.Contains(history.FaultKinds, k) {
				t.Errorf("causeFaults[%s] names %q, not a fault kind", cause, k)
			}
			named[k] = true
		}
	}
	for k := range uncaused {
		if !slices.Contains(history.FaultKinds, k) {
			t.Errorf("uncaused names %q, not a fault kind", k)
		}
		if named[k] {
			t.Errorf("%s is both named by a cause and listed as uncaused", k)
		}
	}
	for _, k := range history.FaultKinds {
		if !named[k] && uncaused[k] == "" {
			t.Errorf("fault kind %s: no cause names it and uncaused does not say why", k)
		}
	}
}
