package metrics

import (
	"reflect"
	"testing"
)

// Two matrices are compared run by run (a cell's seeds each, a cell without
// seeds as one run) and check by check; runs in one only are named; cells
// that did not apply or ran in another shard are no runs.
func TestCompareMatrices(t *testing.T) {
	seeds := func(checks ...map[string]string) []SeedRun {
		var out []SeedRun
		for i, c := range checks {
			out = append(out, SeedRun{Seed: uint64(i + 1), Checks: c, Dir: "d", Phases: &Phases{Workload: 1000}})
		}
		return out
	}
	valid := map[string]string{"mutex": "valid", "liveness": "valid"}
	base := &Matrix{WallMS: 4000, Parallel: 1, Cells: []Cell{
		{Scenario: "gc-pause", Lock: "simple", Applicable: true, Seeds: seeds(map[string]string{"mutex": "invalid"}, map[string]string{"mutex": "invalid"})},
		{Scenario: "smoke", Lock: "simple", Applicable: true, Seeds: seeds(valid, valid)},
		{Scenario: "smoke", Lock: "fenced", Applicable: true, Checks: valid},
		{Scenario: "failover", Lock: "simple", Applicable: false},
		{Scenario: "restart-empty", Lock: "simple", Applicable: true, Outcome: OutcomeElsewhere},
	}}
	cur := &Matrix{WallMS: 1000, Parallel: 8, Cells: []Cell{
		{Scenario: "gc-pause", Lock: "simple", Applicable: true, Seeds: seeds(map[string]string{"mutex": "invalid"}, map[string]string{"mutex": "valid"})},
		{Scenario: "smoke", Lock: "simple", Applicable: true, Seeds: seeds(valid, map[string]string{"mutex": "valid"}, valid)},
		{Scenario: "smoke", Lock: "fenced", Applicable: true, Checks: valid},
	}}
	c := CompareMatrices(base, cur)
	if c.Runs != 5 || c.Checks != 8 {
		t.Errorf("%d runs, %d checks compared: want 5 and 8", c.Runs, c.Checks)
	}
	want := []MatrixDiff{
		{Scenario: "gc-pause", Lock: "simple", Seed: 2, Check: "mutex", Base: "invalid", Cur: "valid", BaseDir: "d", CurDir: "d"},
		{Scenario: "smoke", Lock: "simple", Seed: 2, Check: "liveness", Base: "valid", Cur: "", BaseDir: "d", CurDir: "d"},
	}
	if !reflect.DeepEqual(c.Diffs, want) {
		t.Errorf("diffs:\n%+v\nwant\n%+v", c.Diffs, want)
	}
	if !reflect.DeepEqual(c.OnlyCur, []string{"smoke/simple seed 3"}) || len(c.OnlyBase) != 0 {
		t.Errorf("only in base %v, only in current %v: want the current's seed 3 of smoke/simple", c.OnlyBase, c.OnlyCur)
	}
	if !c.Differs() || c.BaseRunsMS != 4000 || c.CurRunsMS != 5000 {
		t.Errorf("differs %v, runs' times %.0f and %.0f ms: want true, 4000 and 5000", c.Differs(), c.BaseRunsMS, c.CurRunsMS)
	}
	if same := CompareMatrices(base, base); same.Differs() || same.Runs != 5 {
		t.Errorf("a matrix against itself: %+v", same)
	}
}
