package faults

import "testing"

// A throw needs a client target and a point of the critical section, where
// the application's code runs: not inside a lock call, nor outside a hold.
func TestThrowValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "throw", Target: "any-client", Point: "after-acquire"}, ""},
		{Spec{Kind: "throw", Target: "client:1", Point: "before-write"}, ""},
		{Spec{Kind: "throw", Target: "holder", Point: "in-write"}, ""},
		{Spec{Kind: "throw", Target: "any-client", Point: "before-release"}, ""},
		{Spec{Kind: "throw", Target: "any-client"}, `point: ""`},
		{Spec{Kind: "throw", Target: "any-client", Point: "in-acquire"}, `point: "in-acquire"`},
		{Spec{Kind: "throw", Target: "any-client", Point: "in-release"}, `point: "in-release"`},
		{Spec{Kind: "throw", Target: "client:x", Point: "before-write"}, `target: "client:x"`},
	})
}
