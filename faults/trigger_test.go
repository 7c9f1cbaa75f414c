package faults

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/history"
)

// watchClients is a ClientControl whose only working part is Watch: client
// 1 "reaches" any point after reachAfter (never when 0).
type watchClients struct {
	ClientControl
	reachAfter time.Duration
}

func (w watchClients) IDs() []int { return []int{0, 1} }

func (w watchClients) Watch(ctx context.Context, cs []int, point string) <-chan Hit {
	ch := make(chan Hit, 1)
	go func() {
		defer close(ch)
		if w.reachAfter == 0 {
			<-ctx.Done()
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.reachAfter):
			ch <- Hit{Client: cs[len(cs)-1]}
		}
	}()
	return ch
}

func TestWhenValidation(t *testing.T) {
	for w, want := range map[string]string{
		"client:0":                  "is not",
		"holder after-acquire":      "client:N or any-client",
		"client:x after-acquire":    "client:N or any-client",
		"client:0 now":              "the point must be",
		"any-client before-lunch":   "the point must be",
		"client:0 after-acquire xx": "is not",
	} {
		err := Validate(Spec{Kind: "pause-node", When: w}, 2)
		if err == nil || !strings.Contains(err.Error(), "faults[2].when") || !strings.Contains(err.Error(), want) {
			t.Errorf("when %q: error %v, want faults[2].when … %s", w, err, want)
		}
	}
	for _, w := range []string{"client:1 after-acquire", "any-client in-release"} {
		if err := Validate(Spec{Kind: "pause-node", When: w}, 0); err != nil {
			t.Errorf("when %q: %v", w, err)
		}
	}
}

// A fault with When fires when the trigger comes, not at its offset, and
// says what triggered it; a trigger that never comes is recorded as a fault
// that did not take effect, with the reason.
func TestWhenTriggersFault(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	for _, tc := range []struct {
		name    string
		reach   time.Duration
		applied bool
	}{{"reached", 150 * time.Millisecond, true}, {"never", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(c.Cluster)
			env.Clients = watchClients{reachAfter: tc.reach}
			spec := Spec{Kind: "pause-node", At: 10 * time.Millisecond, Every: 400 * time.Millisecond, Count: 1,
				Duration: 50 * time.Millisecond, When: "any-client after-acquire"}
			if err := Validate(spec, 0); err != nil {
				t.Fatal(err)
			}
			start := env.Now()
			evs := runSchedule(env, []Spec{spec}, 600*time.Millisecond)
			if len(evs) == 0 || evs[0].Op != history.OpFault {
				t.Fatalf("no fault recorded: %v", evs)
			}
			f := evs[0].Fault
			t.Logf("fault at %v: applied %v, effect %v", time.Duration(evs[0].T-start), f.Applied, f.Effect)
			if f.Applied != tc.applied || f.Request["when"] != spec.When {
				t.Fatalf("applied %v (want %v), request %v", f.Applied, tc.applied, f.Request)
			}
			if tc.applied {
				if at := time.Duration(evs[0].T - start); at < 150*time.Millisecond {
					t.Errorf("fired at %v, before its trigger at 160ms", at)
				}
				if f.Effect["triggered_by"] != "client 1" || len(evs) != 2 || evs[1].Op != history.OpHeal {
					t.Errorf("effect %v, %d events: want triggered_by client 1 and a heal", f.Effect, len(evs))
				}
			} else if !strings.Contains(f.Effect["reason"], "not reached within 400ms") || len(evs) != 1 {
				t.Errorf("reason %q, %d events: want \"not reached within 400ms\" and no heal", f.Effect["reason"], len(evs))
			}
		})
	}
}

// slowStart is an injector whose Start takes d, recording when it ran.
type slowStart struct {
	d      time.Duration
	mu     *sync.Mutex
	starts *[][2]time.Time
}

func (s slowStart) Start(context.Context, *Env) (Outcome, error) {
	t0 := time.Now()
	time.Sleep(s.d)
	s.mu.Lock()
	*s.starts = append(*s.starts, [2]time.Time{t0, time.Now()})
	s.mu.Unlock()
	return Outcome{Applied: true, Effect: map[string]string{}}, nil
}
func (slowStart) Heal(context.Context, *Env) (map[string]string, error) { return nil, nil }

// Firings of a Serial kind's spec never overlap: one due while the previous
// one still starts (a container restart outlasting the period) waits and
// says so; a kind that is not Serial overlaps.
func TestSerialFiringsDoNotOverlap(t *testing.T) {
	orig := kinds[history.FaultRestartNode]
	defer func() { kinds[history.FaultRestartNode] = orig }()
	for _, serial := range []bool{true, false} {
		var mu sync.Mutex
		var starts [][2]time.Time
		k := orig
		k.Serial = serial
		k.New = func(Scheduled) (Injector, error) { return slowStart{250 * time.Millisecond, &mu, &starts}, nil }
		kinds[history.FaultRestartNode] = k
		env := &Env{Now: func() int64 { return time.Now().UnixNano() }}
		evs := runSchedule(env, []Spec{{Kind: history.FaultRestartNode, At: 10 * time.Millisecond, Every: 100 * time.Millisecond, Count: 3}}, 1200*time.Millisecond)
		mu.Lock()
		overlap := false
		for i := 1; i < len(starts); i++ {
			if starts[i][0].Before(starts[i-1][1]) {
				overlap = true
			}
		}
		n := len(starts)
		mu.Unlock()
		waited := 0
		for _, e := range evs {
			if e.Op == history.OpFault && e.Fault.Effect["waited_for_previous_ms"] != "" {
				waited++
			}
		}
		if n != 3 || overlap == serial || (serial && waited != 2) || (!serial && waited != 0) {
			t.Errorf("serial %v: %d starts, overlapping %v, %d waited; want 3 starts, overlapping %v, %d waited", serial, n, overlap, waited, !serial, map[bool]int{true: 2}[serial])
		}
	}
}

// A renewal trigger names a client, the renewal of a hold (1-100) and an
// optional delay after it; anything else is refused, naming the value.
func TestRenewalTriggerParses(t *testing.T) {
	for _, tc := range []struct {
		when, point string
		delay       time.Duration
		err         string
	}{
		{"any-client renewal 2", "renewal:2", 0, ""},
		{"client:1 renewal 1 +150ms", "renewal:1", 150 * time.Millisecond, ""},
		{"any-client renewal 0", "", 0, `"0"`},
		{"any-client renewal two", "", 0, `"two"`},
		{"any-client renewal 2 150ms", "", 0, `"150ms"`},
		{"holder renewal 2", "", 0, "client:N or any-client"},
		{"any-client renewal 2 +1s extra", "", 0, "is not"},
	} {
		_, point, delay, err := parseWhen(tc.when)
		switch {
		case tc.err == "" && (err != nil || point != tc.point || delay != tc.delay):
			t.Errorf("%q: %q, %v, %v; want %q, %v", tc.when, point, delay, err, tc.point, tc.delay)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one naming %s", tc.when, err, tc.err)
		}
	}
}
