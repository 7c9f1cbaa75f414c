package faults

import "testing"

// The minority-master partition always cuts the master of the run's first
// key's shard off, and its timeout is a duration (the cluster-minority-master
// scenario shows its effect on a Redis Cluster).
func TestIsolateNodeValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "isolate-node"}, ""},
		{Spec{Kind: "isolate-node", Target: "master", Params: map[string]string{"timeout": "20s"}}, ""},
		{Spec{Kind: "isolate-node", Target: "replica"}, `target: "replica"`},
		{Spec{Kind: "isolate-node", Params: map[string]string{"timeout": "soon"}}, `params.timeout: "soon"`},
		{Spec{Kind: "isolate-node", Params: map[string]string{"timeout": "-1s"}}, "params.timeout: -1s is negative"},
	})
	if k := kinds["isolate-node"]; len(k.Topologies) != 1 || k.Topologies[0] != "cluster" {
		t.Errorf("isolate-node topologies %v, want cluster only", k.Topologies)
	}
}
