package faults

import (
	"testing"
	"time"
)

// A pause needs a duration, a client target and a cycle point; its effect
// on a client is tested where the clients are (workloads' pause tests and
// the gc-pause scenario; mode block-loop on a Node driver in runner's
// TestNodeEventLoopBlockLapsesTheLease).
func TestPauseClientValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "pause-client", Duration: 100 * time.Millisecond, Target: "holder", Point: "before-write"}, ""},
		{Spec{Kind: "pause-client", Duration: 100 * time.Millisecond, Target: "any-client", Point: "in-acquire"}, ""},
		{Spec{Kind: "pause-client", Target: "holder"}, "duration: must be > 0"},
		{Spec{Kind: "pause-client", Duration: time.Second, Target: "node:1"}, `target: "node:1"`},
		{Spec{Kind: "pause-client", Duration: time.Second, Point: "lunch"}, `point: "lunch"`},
		{Spec{Kind: "pause-client", Duration: time.Second, Params: map[string]string{"mode": "block-loop"}}, ""},
		{Spec{Kind: "pause-client", Duration: time.Second, Params: map[string]string{"mode": "sigstop"}}, ""},
		{Spec{Kind: "pause-client", Duration: time.Second, Params: map[string]string{"mode": "nap"}}, `params.mode: "nap" is not sigstop or block-loop`},
	})
}
