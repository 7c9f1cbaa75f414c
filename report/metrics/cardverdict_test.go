package metrics

import (
	"strings"
	"testing"
)

// Each lock against its reference on the same card: a finding, a shared
// limit, a family it holds where its reference fails, a lock whose
// reference is absent, and its cost against the fastest correct lock.
func TestJudgeAgainstReferences(t *testing.T) {
	rate := func(invalid int) FamilyRate { return FamilyRate{Runs: 2, Invalid: invalid, Valid: 2 - invalid} }
	bench := func(tp float64) *CardBench { return &CardBench{Lock: BenchLock{Throughput: tp}} }
	c := &Card{Families: []string{"clock", "stall", "cut"}, Locks: []CardLock{
		{Name: "watchdog", Safety: map[string]FamilyRate{"clock": rate(2), "stall": rate(0), "cut": rate(1)}, Bench: bench(1000)},
		{Name: "rueidislock", Safety: map[string]FamilyRate{"clock": rate(1), "stall": rate(2), "cut": rate(1)}, Bench: bench(3000)},
		{Name: "better-renewer", Safety: map[string]FamilyRate{"clock": rate(0), "stall": rate(0), "cut": rate(1)}, Bench: bench(500)},
		{Name: "redsync", Safety: map[string]FamilyRate{"clock": rate(1)}},
	}}
	refs := map[string]string{"watchdog": "watchdog", "rueidislock": "watchdog", "better-renewer": "watchdog", "redsync": "redlock"}
	c.JudgeAgainstReferences(func(l string) string { return refs[l] })
	want := []struct {
		class, line string
		versus      map[string]string
	}{
		{VerdictSafe, "safe within its design (it is the reference of its capabilities); its limits: clock, cut; the fastest correct lock here (1000 cycles/s)",
			map[string]string{"clock": VersusLimit, "stall": VersusSame, "cut": VersusLimit}},
		{VerdictWorse, "worse than its reference watchdog: fails stall, which watchdog holds; 3000 cycles/s",
			map[string]string{"clock": VersusLimit, "stall": VersusWorse, "cut": VersusLimit}},
		{VerdictBetter, "better than its reference watchdog: holds clock, which watchdog fails; shares its limits on cut; 500 cycles/s, 50% of the fastest correct lock (watchdog)",
			map[string]string{"clock": VersusBetter, "stall": VersusSame, "cut": VersusLimit}},
		{VerdictAlone, "invalid on clock; its reference redlock is not on this card", nil},
	}
	for i, w := range want {
		l := c.Locks[i]
		if l.VerdictClass != w.class || !strings.HasPrefix(l.Verdict, w.line) {
			t.Errorf("%s: %s %q, want %s %q…", l.Name, l.VerdictClass, l.Verdict, w.class, w.line)
		}
		for f, v := range w.versus {
			if l.Versus[f] != v {
				t.Errorf("%s on %s: %q, want %q", l.Name, f, l.Versus[f], v)
			}
		}
	}
	// rueidislock, the fastest, is worse than its reference: the cost is
	// against watchdog, the fastest lock not worse than its reference.
	if !strings.Contains(c.Locks[1].Verdict, "3000 cycles/s, 300% of the fastest correct lock (watchdog)") {
		t.Errorf("rueidislock's cost line: %q", c.Locks[1].Verdict)
	}
}

// A family is compared over the scenarios both locks ran: a lock that
// skipped the scenarios its reference failed (meant for other locks) is
// not better there, and its failures in scenarios its reference did not
// run are named as judged alone.
func TestVersusOnTheSameScenarios(t *testing.T) {
	seeds := func(vs ...string) []SeedRun {
		var out []SeedRun
		for i, v := range vs {
			out = append(out, SeedRun{Seed: uint64(i + 1), Verdict: v})
		}
		return out
	}
	c := &Card{Families: []string{"clock", "failover"},
		Scenarios: []CardScenario{{Name: "clock-behind", Family: "clock"}, {Name: "clock-jump", Family: "clock"}, {Name: "failover", Family: "failover"}},
		Locks: []CardLock{
			{Name: "simple", Safety: map[string]FamilyRate{"clock": {Runs: 4, Valid: 2, Invalid: 2}}},
			{Name: "adapter", Safety: map[string]FamilyRate{"clock": {Runs: 2, Valid: 2}, "failover": {Runs: 2, Invalid: 2}}},
		},
		Cells: []Cell{
			{Scenario: "clock-behind", Lock: "simple", Seeds: seeds("valid", "valid")},
			{Scenario: "clock-jump", Lock: "simple", Seeds: seeds("invalid", "invalid")},
			{Scenario: "clock-behind", Lock: "adapter", Seeds: seeds("valid", "valid")},
			{Scenario: "clock-jump", Lock: "adapter"}, // not applicable: no seeds
			{Scenario: "failover", Lock: "adapter", Seeds: seeds("invalid", "invalid")},
		}}
	c.JudgeAgainstReferences(func(string) string { return "simple" })
	a := c.Locks[1]
	if a.Versus["clock"] != VersusSame {
		t.Errorf("clock: %q, want same (both valid on clock-behind, the one clock scenario both ran)", a.Versus["clock"])
	}
	if _, ok := a.Versus["failover"]; ok {
		t.Errorf("failover: %q, want no comparison (simple did not run it)", a.Versus["failover"])
	}
	if a.VerdictClass == VerdictBetter || !strings.Contains(a.Verdict, "fails failover in scenarios simple did not run (judged alone there)") {
		t.Errorf("verdict %s %q", a.VerdictClass, a.Verdict)
	}
}
