package scenarios

import (
	"testing"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// Every broken control is asserted caught by at least one catalog scenario,
// and no correct lock is asserted invalid anywhere except where a fault
// defeats every lock (the scenario's default expectation).
func TestEveryBrokenControlIsCaught(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lockimpl.List() {
		if l.Kind != lockimpl.Broken {
			continue
		}
		if c := Catches(l.Name, all); len(c) == 0 {
			t.Errorf("broken control %s: no catalog scenario expects it invalid", l.Name)
		} else {
			t.Logf("%s caught by %v", l.Name, c)
		}
	}
}
