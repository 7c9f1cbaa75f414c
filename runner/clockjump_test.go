package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/internal/testlocks"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// A server clock that jumps, back or forward, before, during or after a
// hold, makes no correct lock's release or renewal look like another
// client's: the command record keeps the node's order, and its times are
// read on the harness's clock (issue 33, part 2: a correct polling,
// renewing lock was flagged unlock invalid after a jump back). A jump back
// only makes keys live longer, so mutex holds too; a jump forward expires
// the holder's key early, a real overlap, not asserted. The same for a
// drift, slow and fast.
func TestServerClockJumpsBlameNoCorrectLock(t *testing.T) {
	if os.Getenv("LOCKCHAOS_LONG") == "" {
		t.Skip("long tier: LOCKCHAOS_LONG=1 runs it (scripts/test.sh does)")
	}
	testlocks.Register()
	type cell struct {
		name, fault string
		slows       bool // the server's clock falls behind: keys live longer, mutex holds
	}
	var cells []cell
	for _, delta := range []string{"-600ms", "600ms"} {
		for _, when := range []string{"before-acquire", "in-acquire", "after-acquire", "after-release"} {
			cells = append(cells, cell{delta + "/" + when,
				fmt.Sprintf(`{kind: clock-jump, at: 326ms, target: master, when: "client:0 %s", params: {delta: %s}}`, when, delta), delta[0] == '-'})
		}
	}
	// A drift: the clock runs at a rate for 400 ms, and keeps the offset
	// it reached.
	for _, rate := range []string{"0.5", "3"} {
		cells = append(cells, cell{"rate-" + rate,
			fmt.Sprintf(`{kind: clock-drift, at: 300ms, duration: 400ms, target: master, params: {rate: "%s"}}`, rate), rate == "0.5"})
	}
	for _, lock := range []string{"simple", "watchdog", testlocks.PollRenew} {
		for _, c := range cells {
			t.Run(lock+"/"+c.name, func(t *testing.T) {
				// The think time outlasts the polling interval (10 ms + up
				// to 5 ms of jitter), so the waiting client takes the key
				// at each hand-off and a trigger on client 0 is reached
				// within a cycle: with a 10 ms think, a loaded CI machine
				// once let client 1 re-take the key for the whole 674 ms
				// after the fault was armed.
				y := `name: server-clock
topology: single
duration: 1s
recovery: 400ms
lock: {ttl: 200ms}
workload: {clients: 2, keys: 1, hold: 120ms, think: 40ms, resource: counter, honour_lost: true, mode: closed}
faults:
  - ` + c.fault + "\n"
				s, err := scenarios.Parse([]byte(y), c.name)
				if err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(t.TempDir(), "run")
				o, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: lock, Setup: runner.Setup{Backend: "process"}, Out: out, NoPlots: true})
				if err != nil {
					t.Fatal(err)
				}
				cs := o.Results.Checks
				if f := cs[checker.CheckFaults]; f.Verdict != checker.Valid {
					t.Fatalf("the clock fault did not take effect: %+v", f)
				}
				if u := cs[checker.CheckUnlock]; u.Verdict != checker.Valid {
					t.Errorf("unlock %s (%d violations): %+v", u.Verdict, u.Violations, o.Results.Violations)
				}
				if m := cs[checker.CheckMutex]; c.slows && m.Verdict != checker.Valid {
					t.Errorf("mutex %s with the server's clock behind (%d violations): %+v", m.Verdict, m.Violations, o.Results.Violations)
				}
			})
		}
	}
}
