package explore

import (
	"testing"

	"github.com/lockchaos/lockchaos/faults"
)

// Every registered fault kind is drawn by explore (kindDraws) or listed in
// unexplored with why, and neither table names a kind that is not
// registered: a new kind is never silently left out of exploration.
func TestEveryFaultKindIsExploredOrListed(t *testing.T) {
	registered := map[string]bool{}
	for _, k := range faults.Kinds() {
		registered[k.Name] = true
		d, drawn := kindDraws[k.Name]
		why, listed := unexplored[k.Name]
		switch {
		case drawn && listed:
			t.Errorf("fault kind %s is both drawn (kindDraws) and listed as unexplored (%q)", k.Name, why)
		case !drawn && !listed:
			t.Errorf("fault kind %s is neither drawn by explore (a row of kindDraws in explore/kinds.go) nor listed in unexplored with why", k.Name)
		case listed && why == "":
			t.Errorf("fault kind %s is unexplored without a reason", k.Name)
		case drawn && (d.prior <= 0 || d.draw == nil):
			t.Errorf("fault kind %s: prior %d, draw set %v; want a positive prior and a draw", k.Name, d.prior, d.draw != nil)
		}
	}
	for _, m := range []map[string]bool{keys(kindDraws), keys(unexplored)} {
		for k := range m {
			if !registered[k] {
				t.Errorf("explore/kinds.go names %s, which is no registered fault kind", k)
			}
		}
	}
}

// A margin template names a kind explore draws: Templates keeps only the
// applicable ones, so a template of an unexplored kind would be dropped
// without a word.
func TestMarginTemplatesAreExplored(t *testing.T) {
	for _, tm := range allTemplates() {
		if tm.HoldMag {
			continue // no fault: the hold is what explore draws (holdLadder)
		}
		if _, ok := kindDraws[tm.Fault.Spec.Kind]; !ok {
			t.Errorf("margin template %s: kind %s is not drawn by explore (kindDraws), so no topology would keep it", tm.Name, tm.Fault.Spec.Kind)
		}
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
