package campaign_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Known values of the 95% Wilson score interval.
func TestWilson(t *testing.T) {
	cases := []struct {
		hits, n int
		lo, hi  float64
	}{
		{9, 10, 0.5958, 0.9821},
		{0, 3, 0, 0.5615},
		{3, 3, 0.4385, 1},
		{5, 10, 0.2366, 0.7634},
		{0, 10, 0, 0.2775},
	}
	for _, c := range cases {
		lo, hi := metrics.Wilson(c.hits, c.n)
		if math.Abs(lo-c.lo) > 5e-4 || math.Abs(hi-c.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.hits, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := metrics.Wilson(0, 0); lo != 0 || hi != 1 {
		t.Errorf("Wilson(0, 0) = [%v, %v], want [0, 1] (no data)", lo, hi)
	}
}

func TestParseSeeds(t *testing.T) {
	cases := []struct {
		in   string
		want []uint64
		err  string
	}{
		{"1-3", []uint64{1, 2, 3}, ""},
		{"1,3,5", []uint64{1, 3, 5}, ""},
		{"1-3, 7", []uint64{1, 2, 3, 7}, ""},
		{"42", []uint64{42}, ""},
		{"0", nil, `"0" is not a seed`},
		{"3-1", nil, "ends before it starts"},
		{"1,1", nil, "seed 1 is listed twice"},
		{"1-3,2", nil, "seed 2 is listed twice"},
		{"a-b", nil, `"a" is not a seed`},
		{"", nil, `"" is not a seed`},
		{"1-5000", nil, "more than 1000 seeds"},
	}
	for _, c := range cases {
		got, err := campaign.ParseSeeds(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseSeeds(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if got := campaign.RepeatSeeds(5, 3); !reflect.DeepEqual(got, []uint64{5, 6, 7}) {
		t.Errorf("RepeatSeeds(5, 3) = %v", got)
	}
}

// Summarize judges seeds: rates per check, a plain expectation on every
// seed, the outcome and exit code.
func TestSummarize(t *testing.T) {
	run := func(seed uint64, verdict, outcome string, code int, checks map[string]string) campaign.SeedRun {
		return campaign.SeedRun{Seed: seed, Verdict: verdict, Outcome: outcome, ExitCode: code, Checks: checks}
	}
	inv := map[string]string{"mutex": "invalid", "resource": "valid"}
	val := map[string]string{"mutex": "valid", "resource": "valid"}
	runs := []campaign.SeedRun{run(1, "invalid", "as-expected", 0, inv), run(2, "valid", "unexpected", 1, val), run(3, "invalid", "as-expected", 0, inv)}

	s := campaign.Summarize("x", "simple", map[string]string{"mutex": "invalid"}, runs, true)
	if s.Outcome != "unexpected" || s.ExitCode != int(runner.Violated) {
		t.Errorf("plain invalid, 2/3 seeds: outcome %s exit %d, want unexpected 1", s.Outcome, s.ExitCode)
	}
	if r := s.Rates["mutex"][0]; r.Verdict != "invalid" || r.Hits != 2 || r.N != 3 {
		t.Errorf("mutex rate %+v, want invalid 2/3 first", r)
	}
	if got := s.RateText("mutex"); !strings.HasPrefix(got, "invalid in 2/3 (95% CI 0.21–0.94)") {
		t.Errorf("RateText = %q", got)
	}
	if s.Label() != "invalid 2/3" {
		t.Errorf("Label = %q, want invalid 2/3", s.Label())
	}

	s = campaign.Summarize("x", "simple", map[string]string{"mutex": "invalid >=0.6"}, runs, true)
	if s.Outcome != "as-expected" || s.ExitCode != 0 {
		t.Errorf("rate >=0.6, 2/3 seeds: outcome %s exit %d (%q), want as-expected 0", s.Outcome, s.ExitCode, s.Mismatches)
	}
	s = campaign.Summarize("x", "simple", map[string]string{"mutex": "invalid >=0.7"}, runs, true)
	if s.Outcome != "unexpected" {
		t.Errorf("rate >=0.7, 2/3 seeds: outcome %s, want unexpected", s.Outcome)
	}
	// Without --expect the verdicts decide, the worst seed's.
	s = campaign.Summarize("x", "simple", map[string]string{"mutex": "invalid >=0.6"}, runs, false)
	if s.ExitCode != int(runner.Violated) {
		t.Errorf("without expect: exit %d, want 1 (a seed was invalid)", s.ExitCode)
	}
	unk := []campaign.SeedRun{run(1, "valid", "as-expected", 0, val), run(2, "unknown", "unknown", 2, map[string]string{"mutex": "unknown"})}
	s = campaign.Summarize("x", "simple", nil, unk, true)
	if s.Outcome != "unknown" || s.ExitCode != int(runner.Unknown) {
		t.Errorf("one unknown seed: outcome %s exit %d, want unknown 2", s.Outcome, s.ExitCode)
	}
	// A seed that did not run is an error, never a pass.
	s = campaign.Summarize("x", "simple", nil, []campaign.SeedRun{run(1, "valid", "as-expected", 0, val), {Seed: 2, Outcome: "error", Error: "boom"}}, true)
	if s.Outcome != "error" || s.ExitCode != int(runner.Violated) {
		t.Errorf("a failed seed: outcome %s exit %d, want error 1", s.Outcome, s.ExitCode)
	}
}

// A matrix over two seeds: every cell runs once per seed in its own
// directory and is judged over both; a rate expectation is judged by rate.
func TestRunMatrixSeeds(t *testing.T) {
	testenv.Long(t)
	s, err := scenarios.Load("expire-then-unlock")
	if err != nil {
		t.Fatal(err)
	}
	// del-no-owner's mutex breaks on every seed: a rate of >=0.5 holds too.
	s.Expect["del-no-owner"]["mutex"] = scenarios.Want{Verdict: "invalid", Rate: 0.5, Why: "test"}
	out := t.TempDir()
	locks := []string{"simple", "del-no-owner"}
	var seen []string
	m, err := campaign.RunMatrix(context.Background(), campaign.MatrixOptions{Locks: locks, Scenarios: []*scenarios.Scenario{s},
		Out: out, Parallel: 1, Seeds: []uint64{1, 2}, Setup: runner.Setup{Backend: "process"},
		OnSeed: func(c campaign.Cell, r campaign.SeedRun) { seen = append(seen, c.Lock+"/"+r.Dir) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Errorf("OnSeed called for %q, want 4 seed runs", seen)
	}
	for _, c := range m.Cells {
		if c.Outcome != "as-expected" {
			t.Errorf("cell %s/%s: outcome %q, checks %v, notes %q", c.Scenario, c.Lock, c.Outcome, c.Checks, c.Notes)
		}
		if len(c.Seeds) != 2 || c.Seeds[0].Seed != 1 || c.Seeds[1].Seed != 2 {
			t.Fatalf("cell %s/%s: seeds %+v, want runs of seeds 1 and 2", c.Scenario, c.Lock, c.Seeds)
		}
		for _, r := range c.Seeds {
			want := filepath.Join(out, "expire-then-unlock", c.Lock, "seed-"+map[uint64]string{1: "1", 2: "2"}[r.Seed])
			if r.Dir != want {
				t.Errorf("seed %d ran in %q, want %q", r.Seed, r.Dir, want)
			}
			if _, err := os.Stat(filepath.Join(r.Dir, "results.json")); err != nil {
				t.Error(err)
			}
		}
		if rs := c.Rates["mutex"]; len(rs) == 0 || rs[0].N != 2 {
			t.Errorf("cell %s/%s: mutex rates %+v, want over 2 seeds", c.Scenario, c.Lock, rs)
		}
		var sum campaign.SeedSummary
		b, err := os.ReadFile(filepath.Join(c.Dir, "seeds.json"))
		if err == nil {
			err = json.Unmarshal(b, &sum)
		}
		if err != nil || len(sum.Runs) != 2 || sum.Outcome != c.Outcome {
			t.Errorf("cell %s/%s: seeds.json %v: %+v", c.Scenario, c.Lock, err, sum)
		}
		if _, err := os.Stat(filepath.Join(c.Dir, "report.html")); err != nil {
			t.Error(err)
		}
	}
	if del := m.Cells[1]; del.Checks["mutex"] != "invalid" || del.Expected["mutex"] != "invalid >=0.5" {
		t.Errorf("del-no-owner: checks %v expected %v, want mutex invalid on both seeds against invalid >=0.5", del.Checks, del.Expected)
	}
	if err := report.WriteMatrix(out, m); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "matrix.md"))
	if !strings.Contains(string(md), "× 2 seeds (1-2)") {
		t.Errorf("matrix.md does not say the seeds:\n%s", md)
	}
	if m.ExitCode != 0 {
		t.Errorf("exit code %d, want 0", m.ExitCode)
	}
}

// Text of a matrix whose seeds disagree: the label and the rates.
func TestMatrixMarkdownRates(t *testing.T) {
	sum := campaign.Summarize("gc-pause", "simple", map[string]string{"mutex": "invalid"}, []campaign.SeedRun{
		{Seed: 1, Verdict: "invalid", Outcome: "as-expected", Checks: map[string]string{"mutex": "invalid"}, Dir: "/m/gc-pause/simple/seed-1"},
		{Seed: 2, Verdict: "valid", Outcome: "unexpected", ExitCode: 1, Checks: map[string]string{"mutex": "valid"}, Dir: "/m/gc-pause/simple/seed-2"},
	}, true)
	m := &campaign.Matrix{Locks: []string{"simple"}, Scenarios: []string{"gc-pause"}, Seeds: []uint64{1, 2}, ExitCode: 1,
		Cells: []campaign.Cell{{Scenario: "gc-pause", Lock: "simple", Applicable: true, Verdict: sum.Majority(), Label: sum.Label(),
			Outcome: sum.Outcome, Expected: sum.Expected, Seeds: sum.Runs, Rates: sum.Rates}}}
	md := report.MatrixMarkdown(m, nil)
	for _, want := range []string{"invalid 1/2 UNEXPECTED", "gc-pause / simple: mutex invalid in 1/2 (95% CI 0.09–0.91), valid in 1/2", "seed 2: unexpected", "/m/gc-pause/simple/seed-2"} {
		if !strings.Contains(md, want) {
			t.Errorf("matrix.md lacks %q:\n%s", want, md)
		}
	}
}
