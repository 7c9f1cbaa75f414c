package faults

import "testing"

// A crash needs a client target and a cycle point (the crash-between
// scenario shows its effect).
func TestCrashClientValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "crash-client", Target: "any-client", Point: "in-acquire"}, ""},
		{Spec{Kind: "crash-client", Target: "client:x"}, `target: "client:x"`},
		{Spec{Kind: "crash-client", Point: "lunch"}, `point: "lunch"`},
	})
}
