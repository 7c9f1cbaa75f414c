package faults

import "testing"

// A stall needs a positive delay; its commands are a comma-separated list.
func TestStallCommandsValidation(t *testing.T) {
	checkValidation(t, []validation{
		{Spec{Kind: "stall-commands", Target: "holder", Params: map[string]string{"delay": "400ms", "commands": "pexpire, evalsha"}}, ""},
		{Spec{Kind: "stall-commands", Params: map[string]string{"delay": "1s"}}, ""},
		{Spec{Kind: "stall-commands"}, `params.delay: ""`},
		{Spec{Kind: "stall-commands", Params: map[string]string{"delay": "-1s"}}, `params.delay: "-1s"`},
		{Spec{Kind: "stall-commands", Target: "master", Params: map[string]string{"delay": "1s"}}, `target: "master"`},
	})
}
