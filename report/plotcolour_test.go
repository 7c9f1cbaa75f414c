package report

import (
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// Every fault kind (history.FaultKinds, which faults registers exactly) has its own entry in the legend's colours,
// so a new kind is not left to a hashed colour that may match another
// family's.
func TestEveryFaultKindHasAColour(t *testing.T) {
	for _, k := range history.FaultKinds {
		if _, ok := kindColors[k]; !ok {
			t.Errorf("fault kind %s has no colour in kindColors", k)
		}
	}
	for k := range kindColors {
		if !slices.Contains(history.FaultKinds, k) {
			t.Errorf("kindColors has %s, not a fault kind", k)
		}
	}
}
