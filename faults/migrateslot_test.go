package faults

import "testing"

// A slot migration always moves the run's first key's slot, on a Redis
// Cluster only (the cluster-slot-migration scenario shows its effect).
func TestMigrateSlotValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "migrate-slot"}, ""},
		{Spec{Kind: "migrate-slot", Target: "master"}, ""},
		{Spec{Kind: "migrate-slot", Target: "node:2"}, `target: "node:2"`},
	})
	if k := kinds["migrate-slot"]; len(k.Topologies) != 1 || k.Topologies[0] != "cluster" {
		t.Errorf("migrate-slot topologies %v, want cluster only", k.Topologies)
	}
}
