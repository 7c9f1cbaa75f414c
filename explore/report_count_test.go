package explore

import "testing"

// Only confirmed findings are findings: a candidate the budget cut short
// in its confirmation is counted apart (the CLI exits 2 on it, not 1).
func TestFindingsByConfirmation(t *testing.T) {
	r := &Report{Findings: []*Found{{N: 1, Confirmed: true}, {N: 2}, {N: 3}}}
	if c, cut := r.FindingsByConfirmation(); c != 1 || cut != 2 || r.Confirmed() != 1 {
		t.Fatalf("confirmed %d, cut short %d", c, cut)
	}
}
