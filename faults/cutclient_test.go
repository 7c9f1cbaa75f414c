package faults

import "testing"

// A client's cut names its nodes (1-based) and a mode, reset or drop.
func TestCutClientValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "cut-client", Target: "holder"}, ""},
		{Spec{Kind: "cut-client", Target: "client:0", Params: map[string]string{"nodes": "4,5", "mode": "drop"}}, ""},
		{Spec{Kind: "cut-client", Params: map[string]string{"nodes": "x"}}, "params.nodes"},
		{Spec{Kind: "cut-client", Params: map[string]string{"mode": "slow"}}, `params.mode: "slow"`},
		{Spec{Kind: "cut-client", Target: "node:1"}, `target: "node:1"`},
	})
}
