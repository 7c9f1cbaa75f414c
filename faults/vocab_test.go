package faults

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// The registered kinds are exactly history.FaultKinds, the vocabulary the
// checker's causes and the report's legend are tested against.
func TestKindsMatchTheVocabulary(t *testing.T) {
	for _, k := range Kinds() {
		if !slices.Contains(history.FaultKinds, k.Name) {
			t.Errorf("registered kind %s is not in history.FaultKinds", k.Name)
		}
		if k.New == nil || k.Description == "" {
			t.Errorf("kind %s: New and Description are required", k.Name)
		}
	}
	for _, name := range history.FaultKinds {
		if _, ok := kinds[name]; !ok {
			t.Errorf("history.FaultKinds has %s, but no kind registers it", name)
		}
	}
}

// A bad param is found by Validate through the kind's New, the one place
// its params are parsed, and named.
func TestValidateParsesParamsThroughNew(t *testing.T) {
	for _, tc := range []struct {
		s    Spec
		want string
	}{
		{Spec{Kind: history.FaultReplicationLag, Params: map[string]string{"latency": "soon"}}, `params.latency: "soon"`},
		{Spec{Kind: history.FaultLatency, Params: map[string]string{"latency": "10ms", "direction": "up"}}, `params.direction: "up"`},
		{Spec{Kind: history.FaultPartition, Params: map[string]string{"mode": "melt"}}, `params.mode: "melt"`},
		{Spec{Kind: history.FaultStallCommands, Target: "client:0"}, `params.delay: ""`},
		{Spec{Kind: history.FaultFailover, Params: map[string]string{"timeout": "x"}}, `params.timeout: "x"`},
		{Spec{Kind: history.FaultClockDrift, Params: map[string]string{"rate": "1"}}, `params.rate: "1"`},
		{Spec{Kind: history.FaultCutClient, Target: "client:0", Params: map[string]string{"nodes": "0"}}, `params.nodes`},
	} {
		err := Validate(tc.s, 2)
		if err == nil || !strings.Contains(err.Error(), "faults[2] ("+tc.s.Kind+"): "+tc.want) {
			t.Errorf("%s %v: got %v, want an error naming %s", tc.s.Kind, tc.s.Params, err, tc.want)
		}
	}
}
