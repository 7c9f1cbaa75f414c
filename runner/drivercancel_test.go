package runner_test

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// TestDriverCancelReachesTheLibraryCall: the cancel fault on a driver lock
// with the protocol's cancel extension (redis-py's asyncio Lock: the
// task in the call is cancelled) reaches the library call in flight. The
// in-acquire cancels are sent with the call, while the client waits for a
// key the other holds, and end the library's wait (call_answer cancelled);
// the critical-section cancel reaches the release that follows, and the
// in-release one a release in flight. Every fault says what the driver
// did, and the history has the cancelled calls. The explicit idiom with a
// 10 ms sleep between tries (the library's default is 0.1 s): the clients
// cycle fast enough for each cancel to find its call within the run, under
// -race on a loaded machine too (in the default async-with mode and the
// 0.1 s sleep, client 1 once reached no release in time).
func TestDriverCancelReachesTheLibraryCall(t *testing.T) {
	lock := driverLock(t, "python", "redis-py-asyncio")
	const y = `
name: driver-cancel
topology: single
duration: 2500ms
lock: {ttl: 500ms, acquire_timeout: 1s, extra: {api: acquire, sleep: "0.01"}}
workload: {clients: 2, keys: 1, hold: 60ms, think: 30ms, resource: counter}
faults:
  - {kind: cancel, at: 200ms, every: 300ms, count: 3, target: any-client, point: in-acquire, params: {delay: 20ms}}
  - {kind: cancel, at: 1100ms, target: any-client, point: after-acquire}
  - {kind: cancel, at: 1300ms, target: client:1, point: in-release}
`
	o, evs := runCollecting(t, y, lock)
	if o.Results == nil {
		t.Fatal("no results")
	}
	answers := map[string]int{}
	fired := 0
	for _, e := range evs {
		if e.Op != history.OpFault || e.Fault == nil || e.Fault.Kind != history.FaultCancel {
			continue
		}
		fired++
		eff := e.Fault.Effect
		t.Logf("fault %d at %s: applied %v %v", e.Fault.ID, eff[history.EffectCancelledAt], e.Fault.Applied, eff)
		if eff[history.EffectDelivered] == "" && eff[history.EffectReason] == "" {
			t.Errorf("fault %d says neither whether the cancel reached the driver's call nor why not: %v", e.Fault.ID, eff)
		}
		if e.Fault.Applied && eff[history.EffectDelivered] != "true" {
			t.Errorf("fault %d applied, but the cancel did not reach the call: %v", e.Fault.ID, eff)
		}
		if strings.HasPrefix(eff[history.EffectReason], "cancel: lock") {
			t.Errorf("fault %d: the driver's call was not cancelled: %s", e.Fault.ID, eff[history.EffectReason])
		}
		answers[eff[history.EffectCancelledCall]+" "+eff[history.EffectCallAnswer]]++
	}
	if fired != 5 {
		t.Fatalf("%d cancel faults fired, want 5", fired)
	}
	// A 20 ms delay into a wait for a key held 60 ms: the library's wait
	// ends by the cancel (at least once of three; the others may find the
	// key free, and answer acquired before the cancel comes).
	if answers["acquire cancelled"] == 0 {
		t.Errorf("no acquire was ended by its cancel: %v", answers)
	}
	// The critical-section cancel reaches the release that follows; the
	// in-release one, sent with a one-command release, reaches one (a
	// release that answered first is tried again at the client's next).
	if n := answers["release cancelled"] + answers["release released"]; n != 2 {
		t.Errorf("the critical-section and in-release cancels did not both reach a release: %v", answers)
	}
	// The history has what the cancelled calls returned: the cancelled
	// acquires are unknown outcomes, and the holds stayed exclusive.
	if m := o.Results.Checks[checker.CheckMutex]; m.Verdict != checker.Valid {
		t.Errorf("mutex %s: %+v", m.Verdict, m)
	}
	if o.Results.Stats.Acquires.Unknown == 0 {
		t.Errorf("no acquire is recorded unknown: %+v", o.Results.Stats.Acquires)
	}
}
