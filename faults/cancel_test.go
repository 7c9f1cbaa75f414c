package faults

import "testing"

// A cancel needs a client target and a point inside a lock call or the
// critical section: before the acquire there is no call to cancel, after
// the release none left (the cancelled-acquire and cancelled-request
// scenarios show its effect).
func TestCancelValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "cancel", Target: "any-client", Point: "in-acquire"}, ""},
		{Spec{Kind: "cancel", Target: "client:1", Point: "before-release"}, ""},
		{Spec{Kind: "cancel", Target: "any-client", Point: "in-release"}, ""},
		{Spec{Kind: "cancel", Target: "any-client"}, `point: ""`},
		{Spec{Kind: "cancel", Target: "any-client", Point: "before-acquire"}, `point: "before-acquire"`},
		{Spec{Kind: "cancel", Target: "any-client", Point: "now"}, `point: "now"`},
		{Spec{Kind: "cancel", Target: "client:x", Point: "in-acquire"}, `target: "client:x"`},
	})
}
