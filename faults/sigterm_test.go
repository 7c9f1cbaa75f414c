package faults

import "testing"

// A sigterm needs a client target and a cycle point (or now); its delay is
// for a driver's call in flight, its grace a positive duration.
func TestSigtermValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "sigterm", Target: "any-client", Point: "after-acquire"}, ""},
		{Spec{Kind: "sigterm", Target: "client:0"}, ""},
		{Spec{Kind: "sigterm", Target: "holder", Point: "in-acquire", Params: map[string]string{"delay": "3ms"}}, ""},
		{Spec{Kind: "sigterm", Target: "any-client", Point: "before-write", Params: map[string]string{"grace": "5s"}}, ""},
		{Spec{Kind: "sigterm", Target: "any-client", Point: "before-write", Params: map[string]string{"delay": "3ms"}}, `params.delay: "3ms"`},
		{Spec{Kind: "sigterm", Target: "any-client", Point: "in-release", Params: map[string]string{"delay": "soon"}}, `params.delay: "soon"`},
		{Spec{Kind: "sigterm", Target: "any-client", Params: map[string]string{"grace": "0s"}}, `params.grace: "0s"`},
		{Spec{Kind: "sigterm", Target: "any-client", Point: "mid-air"}, `point: "mid-air"`},
		{Spec{Kind: "sigterm", Target: "client:x"}, `target: "client:x"`},
	})
}
