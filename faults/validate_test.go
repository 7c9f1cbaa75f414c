package faults

import (
	"strings"
	"testing"
	"time"
)

// ValidateRun refuses a fault that could not take effect in the run, naming
// the field and the value, and accepts the edge cases that can.
func TestValidateRun(t *testing.T) {
	ms := time.Millisecond
	single := Run{Duration: 2 * time.Second, Recovery: time.Second, Clients: 3, Topology: "single", Nodes: 1}
	indep := Run{Duration: 3 * time.Second, Recovery: time.Second, Clients: 2, Topology: "independent", Nodes: 5}
	sentinel := Run{Duration: 9 * time.Second, Recovery: 2 * time.Second, Clients: 3, Topology: "sentinel", Nodes: 3}
	pause := func(at time.Duration) Spec {
		return Spec{Kind: "pause-client", At: at, Duration: 400 * ms, Target: "holder", Point: "before-write"}
	}
	with := func(s Spec, f func(*Spec)) Spec { f(&s); return s }
	cases := []struct {
		name string
		s    Spec
		r    Run
		want string // "" = accepted
	}{
		{"at past the end", pause(5 * time.Second), single, "faults[0].at: 5s is at or after the end of the run (duration 2s)"},
		{"at the end", Spec{Kind: "restart-node", At: 2 * time.Second}, single, "faults[0].at: 2s"},
		{"at just before the end", Spec{Kind: "restart-node", At: 2*time.Second - ms}, single, ""},
		{"count does not fit", Spec{Kind: "clock-jump", At: 300 * ms, Every: 400 * ms, Count: 6, Params: map[string]string{"delta": "1s"}}, single,
			"faults[0].count: 6 firings every 400ms from 300ms do not fit in the run (duration 2s): only 5 do"},
		{"count fits", Spec{Kind: "clock-jump", At: 300 * ms, Every: 400 * ms, Count: 5, Params: map[string]string{"delta": "1s"}}, single, ""},
		{"every until the end", with(pause(300*ms), func(s *Spec) { s.Every = 500 * ms }), single, ""},
		{"too many firings", Spec{Kind: "restart-node", Every: time.Microsecond}, single, "faults[0].every: 1µs from 0s fires 2000000 times"},
		{"count too large", Spec{Kind: "restart-node", Count: 1 << 40}, single, "faults[0].count: 1099511627776 is more than 10000"},
		{"random past the end", Spec{Kind: "restart-node", Random: []time.Duration{time.Second, 3 * time.Second}}, single, "faults[0].random: [1s, 3s) reaches past the end"},
		{"random with at", Spec{Kind: "restart-node", At: ms, Random: []time.Duration{0, time.Second}}, single, "faults[0].at: 1ms has no effect with random"},
		{"random with every", Spec{Kind: "restart-node", Every: ms, Random: []time.Duration{0, time.Second}}, single, "faults[0].every: 1ms has no effect with random"},
		{"random within", Spec{Kind: "restart-node", Count: 3, Random: []time.Duration{0, 2 * time.Second}}, single, ""},
		{"healed fault outlasts the workload", Spec{Kind: "cut-client", At: time.Second, Duration: 1500 * ms, Target: "holder"}, single,
			"faults[0].duration: 1.5s from the last firing at 1s ends at 2.5s, after the end of the workload phase (duration 2s)"},
		{"pause runs into the recovery", with(pause(300*ms), func(s *Spec) { s.Every = 500 * ms }), single, ""},
		{"pause outlasts the run", with(pause(time.Second), func(s *Spec) { s.Duration = 2500 * ms }), single,
			"faults[0].duration: 2.5s from the last firing at 1s ends at 3.5s, after the end of the run (duration 2s + recovery 1s)"},
		{"client 99 of 3", with(pause(0), func(s *Spec) { s.Target = "client:99" }), single,
			`faults[0].target: "client:99" is not a client of this run (workload.clients: 3`},
		{"client 2 of 3", with(pause(0), func(s *Spec) { s.Target = "client:2" }), single, ""},
		{"negative client", Spec{Kind: "stall-commands", Target: "client:-1", Params: map[string]string{"delay": "1ms"}}, single, `faults[0].target: "client:-1"`},
		{"when client 5 of 2", Spec{Kind: "restart-node", When: "client:5 after-acquire", Target: "node:3"}, indep,
			`faults[0].when: "client:5 after-acquire": "client:5" is not a client`},
		{"node 6 of 5", Spec{Kind: "pause-node", Target: "node:6"}, indep, `faults[0].target: "node:6": "6" is not a node number 1..5 (topology independent)`},
		{"node 2 of single", Spec{Kind: "kill-node", Target: "nodes:1,2"}, single, `faults[0].target: "nodes:1,2"`},
		{"node 3 of sentinel", Spec{Kind: "kill-node", Target: "node:3"}, sentinel, ""},
		{"replica of single", Spec{Kind: "kill-node", Target: "replica"}, single, `faults[0].target: "replica": topology single has no replica`},
		{"replica of sentinel", Spec{Kind: "kill-node", Target: "replica"}, sentinel, ""},
		{"minority of 1", Spec{Kind: "pause-node", Target: "minority"}, single, `faults[0].target: "minority" of 1 nodes is no node`},
		{"cut from node 7", Spec{Kind: "cut-client", Target: "client:0", Params: map[string]string{"nodes": "4,7"}}, indep,
			`faults[0].params.nodes: "7" is not a node number 1..5`},
		{"failover on single", Spec{Kind: "failover", At: time.Second}, single, `faults[0].kind: "failover" needs topology sentinel or cluster, not single`},
		{"failover on cluster", Spec{Kind: "failover", At: time.Second}, Run{Duration: 5 * time.Second, Clients: 2, Topology: "cluster", Nodes: 6}, ""},
		{"replication lag on independent", Spec{Kind: "replication-lag", Params: map[string]string{"latency": "1s"}}, indep, `faults[0].kind: "replication-lag" needs topology sentinel`},
		{"failover on sentinel", Spec{Kind: "failover", At: time.Second}, sentinel, ""},
		{"link to node 2 of single", Spec{Kind: "link", Target: "holder -> node:2", Params: map[string]string{"delay": "10ms"}}, single, `faults[0].target: "node:2"`},
		{"link from client 3 of 3", Spec{Kind: "link", Target: "client:3 -> master", Params: map[string]string{"delay": "10ms"}}, single, `faults[0].target: "client:3" is not a client`},
		{"link client 1 to node 5", Spec{Kind: "link", Target: "client:1 -> node:5", Params: map[string]string{"mode": "drop"}}, indep, ""},
		{"restart from aof without aof", Spec{Kind: "restart-node", Params: map[string]string{"mode": "aof"}}, single, `faults[0].params.mode: "aof"`},
		{"restart from aof with aof", Spec{Kind: "restart-node", Params: map[string]string{"mode": "aof"}}, aof(single), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Validate(c.s, 0); err != nil {
				t.Fatalf("the spec is not valid on its own: %v", err)
			}
			err := ValidateRun(c.s, 0, c.r)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted, want %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func aof(r Run) Run { r.AOF = true; return r }

// A firing whose time has not come when the workload phase ends (the run
// was cut short) is recorded as a fault that did not take effect, with the
// reason, rather than left out of the history.
func TestUnfiredFiringIsRecorded(t *testing.T) {
	env := testEnv(nil)
	evs := runSchedule(env, []Spec{{Kind: "pause-node", At: 800 * time.Millisecond}}, 50*time.Millisecond)
	if len(evs) != 1 || evs[0].Fault == nil {
		t.Fatalf("%d events, want the one firing recorded", len(evs))
	}
	if f := evs[0].Fault; f.Applied || f.ID != 1 || !strings.Contains(f.Effect["reason"], "never fired") {
		t.Fatalf("fault %+v, want id 1 not applied, reason \"never fired …\"", f)
	}
}

// validation is one spec of a kind's validation cases: want "" = accepted,
// else a substring of the error (the field and the value it names).
type validation struct {
	s    Spec
	want string
}

// checkValidation runs a kind's validation cases through Validate, as a
// scenario's load does.
func checkValidation(t *testing.T, cases []validation) {
	t.Helper()
	for _, c := range cases {
		err := Validate(c.s, 0)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v refused: %v", c.s, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want it to contain %q", c.s, err, c.want)
		}
	}
}
