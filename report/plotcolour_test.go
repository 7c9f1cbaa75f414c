package report

import (
	"testing"

	"github.com/lockchaos/lockchaos/faults"
)

// Every registered fault kind has its own entry in the legend's colours,
// so a new kind is not left to a hashed colour that may match another
// family's.
func TestEveryFaultKindHasAColour(t *testing.T) {
	for _, k := range faults.Kinds() {
		if _, ok := kindColors[k.Name]; !ok {
			t.Errorf("fault kind %s has no colour in kindColors", k.Name)
		}
	}
}
