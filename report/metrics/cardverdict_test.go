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
