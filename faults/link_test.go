package faults

import (
	"strings"
	"testing"
)

// The link kind's target and params are refused with the field and the
// value named, and its defaults depend on the mode.
func TestLinkSpecValidation(t *testing.T) {
	cases := []struct {
		target string
		params map[string]string
		want   string // "" = accepted
	}{
		{"holder -> master", map[string]string{"delay": "300ms"}, ""},
		{"client:0->node:2", map[string]string{"mode": "drop", "direction": "from-node"}, ""},
		{"holder", map[string]string{"delay": "300ms"}, `target: "holder" is not "CLIENT -> NODES"`},
		{"master -> holder", map[string]string{"delay": "300ms"}, `client side: target: "master"`},
		{"holder -> somewhere", map[string]string{"delay": "300ms"}, `node side: target: "somewhere"`},
		{"holder -> master", nil, `params.delay: "" is not a duration of at least 1ms`},
		{"holder -> master", map[string]string{"delay": "500us"}, `params.delay: "500us"`},
		{"holder -> master", map[string]string{"mode": "slow", "delay": "1s"}, `params.mode: "slow" is not delay, drop or reset`},
		{"holder -> master", map[string]string{"mode": "reset", "delay": "1s"}, `params.delay: "1s" is set but mode reset delays nothing`},
		{"holder -> master", map[string]string{"delay": "1s", "direction": "up"}, `params.direction: "up"`},
	}
	for _, c := range cases {
		err := Validate(Spec{Kind: "link", Target: c.target, Params: c.params}, 0)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %v refused: %v", c.target, c.params, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q %v: error %v, want it to contain %q", c.target, c.params, err, c.want)
		}
	}
	for mode, dir := range map[string]string{"delay": "to-node", "drop": "both", "reset": "both"} {
		p := map[string]string{"mode": mode}
		if mode == "delay" {
			p["delay"] = "5ms"
		}
		lp, err := parseLinkParams(p)
		if err != nil || lp.direction != dir {
			t.Errorf("mode %s: direction %q (%v), want %q by default", mode, lp.direction, err, dir)
		}
	}
	if n := NeedsOf([]Spec{{Kind: "pause-client"}, {Kind: "link"}}); !n.Links || n.Proxy {
		t.Errorf("NeedsOf(pause-client, link) = %+v, want links only", n)
	}
	if n := NeedsOf([]Spec{{Kind: "latency"}, {Kind: "clock-jump"}}); n.Links || !n.Proxy || !n.RealClock {
		t.Errorf("NeedsOf(latency, clock-jump) = %+v, want proxy and real clock", n)
	}
}
