package report

import (
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// Every fault kind has a colour through its family, and every family its
// own entry in the legend's colours, so a new kind is not left to a hashed
// colour that may match another family's.
func TestEveryFaultKindHasAColour(t *testing.T) {
	for _, k := range history.FaultKinds {
		if _, ok := familyColors[history.FaultFamily(k)]; !ok {
			t.Errorf("fault kind %s (family %q) has no colour", k, history.FaultFamily(k))
		}
	}
	for _, f := range history.FaultFamilies {
		if _, ok := familyColors[f]; !ok {
			t.Errorf("family %s has no colour in familyColors", f)
		}
	}
	for f := range familyColors {
		if !slices.Contains(history.FaultFamilies, f) {
			t.Errorf("familyColors has %s, not a family", f)
		}
	}
}
