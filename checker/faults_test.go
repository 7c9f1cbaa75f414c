package checker

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// A firing the schedule holds but the history does not (the run was cut
// short before it) makes the run unknown, naming the fault; with every
// firing recorded the same run is valid. Checked through a history file,
// as run and check read it (the schedule decoded from JSON).
func TestScheduledFaultNeverFiredIsUnknown(t *testing.T) {
	scheduled := []map[string]any{
		{"id": 1, "kind": "pause-node", "at_ms": 20.0},
		{"id": 2, "kind": "pause-node", "at_ms": 1500.0},
	}
	run := func(fired ...int) *Result {
		b := newHB(map[string]any{history.MetaFaultsScheduled: scheduled})
		b.cycle(0, 0, 1)
		for _, id := range fired {
			t0 := int64(20 + 100*id)
			b.add(history.Event{T: t0 * ms, End: (t0 + 1) * ms, Client: -1, Op: history.OpFault, Node: "n1",
				Fault: &history.Fault{ID: id, Kind: "pause-node", Target: "node n1", Applied: true}})
			b.add(history.Event{T: (t0 + 10) * ms, End: (t0 + 11) * ms, Client: -1, Op: history.OpHeal,
				Fault: &history.Fault{ID: id, Kind: "pause-node", Applied: true}})
		}
		b.cycle(1, 400, 2)
		p := writeHistory(t, filepath.Join(t.TempDir(), "history.jsonl"), b.ev)
		r, err := CheckFile(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := run(1, 2); r.Verdict != Valid || r.Checks[CheckFaults].Verdict != Valid {
		t.Fatalf("every firing recorded: verdict %s (faults %s %v), want valid", r.Verdict, r.Checks[CheckFaults].Verdict, r.Checks[CheckFaults].Notes)
	}
	r := run(1)
	if r.Verdict != Unknown || r.Checks[CheckFaults].Verdict != Unknown {
		t.Fatalf("fault 2 never fired: verdict %s (faults %s), want unknown", r.Verdict, r.Checks[CheckFaults].Verdict)
	}
	if notes := strings.Join(r.Checks[CheckFaults].Notes, " "); !strings.Contains(notes, "fault 2 (pause-node, scheduled at 1.500 s) never fired") {
		t.Errorf("notes %q do not name the fault that never fired", notes)
	}
	// No faults recorded at all: still unknown (the check is not skipped).
	if r := run(); r.Checks[CheckFaults].Verdict != Unknown {
		t.Errorf("no firing recorded: faults check %s, want unknown", r.Checks[CheckFaults].Verdict)
	}
}

func TestUnappliedFaultMakesRunUnknown(t *testing.T) {
	b := newHB(nil)
	b.cycle(0, 0, 1)
	b.add(history.Event{T: 20 * ms, Client: -1, Op: history.OpFault,
		Fault: &history.Fault{ID: 1, Kind: "pause-client", Target: "holder", Effect: map[string]string{"reason": "no client holds a lock now"}}})
	b.cycle(1, 30, 2)
	r := Check(b.ev, Options{})
	if r.Verdict != Unknown || r.Checks[CheckFaults].Verdict != Unknown {
		t.Fatalf("verdict %s (faults %s), want unknown", r.Verdict, r.Checks[CheckFaults].Verdict)
	}
	if !strings.Contains(strings.Join(r.Checks[CheckFaults].Notes, " "), "no client holds") {
		t.Errorf("notes %v do not say why the fault failed", r.Checks[CheckFaults].Notes)
	}
}
