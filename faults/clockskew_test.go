package faults

import "testing"

// A client's clock skew needs an offset or a rate, each parsed with the
// field named.
func TestClockSkewValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "clock-skew", Target: "client:1", Params: map[string]string{"offset": "300ms"}}, ""},
		{Spec{Kind: "clock-skew", Params: map[string]string{"rate": "1.5"}}, ""},
		{Spec{Kind: "clock-skew"}, "params: give offset"},
		{Spec{Kind: "clock-skew", Params: map[string]string{"offset": "soon"}}, `params.offset: "soon"`},
		{Spec{Kind: "clock-skew", Params: map[string]string{"rate": "-1"}}, `params.rate: "-1"`},
		{Spec{Kind: "clock-skew", Target: "master", Params: map[string]string{"rate": "2"}}, `target: "master"`},
	})
}
