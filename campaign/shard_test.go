package campaign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Three shards, merged, give the unsharded matrix cell for cell; every
// applicable cell runs in exactly one shard; shards that do not belong
// together are refused, naming why.
func TestShardsMergeToTheWholeMatrix(t *testing.T) {
	testenv.Long(t)
	var list []*scenarios.Scenario
	for _, n := range []string{"smoke", "contention", "hot-keys"} {
		s, err := scenarios.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		// Short and light: the test is about merging, and two runs of a
		// cell must agree, which 32 clients starving on two loaded cores
		// (liveness) would not promise.
		s.Duration, s.Recovery = 300*time.Millisecond, 100*time.Millisecond
		s.Workload.Clients = min(s.Workload.Clients, 4)
		list = append(list, s)
	}
	locks := []string{"simple", "reentrant", "fenced", "redlock"}
	run := func(dir string, sh *campaign.Shard) *campaign.Matrix {
		t.Helper()
		m, err := campaign.RunMatrix(context.Background(), campaign.MatrixOptions{Locks: locks, Scenarios: list, Out: dir,
			Seeds: []uint64{1, 2}, Shard: sh, Setup: runner.Setup{Backend: "embedded"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := report.WriteMatrix(dir, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	root := t.TempDir()
	whole := run(filepath.Join(root, "whole"), nil)
	var dirs []string
	ran := map[string]int{}
	for k := 1; k <= 3; k++ {
		d := filepath.Join(root, fmt.Sprint("shard-", k))
		m := run(d, &campaign.Shard{Index: k, Count: 3})
		for _, c := range m.Cells {
			if c.Applicable && c.Outcome != campaign.OutcomeElsewhere {
				ran[c.Scenario+"/"+c.Lock]++
			}
		}
		dirs = append(dirs, d)
	}
	merged, err := campaign.MergeShards(dirs)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*campaign.Matrix{"whole": whole, "merged": merged} {
		for _, c := range m.Cells {
			if c.Outcome == "unexpected" || c.Outcome == "error" {
				t.Logf("%s: %s/%s %s: checks %v, expected %v, reason %q, notes %q, dir %s", name, c.Scenario, c.Lock, c.Outcome, c.Checks, c.Expected, c.Reason, c.Notes, c.Dir)
			}
		}
	}
	if merged.ExitCode != whole.ExitCode || len(merged.Cells) != len(whole.Cells) {
		t.Fatalf("merged exit %d with %d cells, whole exit %d with %d cells", merged.ExitCode, len(merged.Cells), whole.ExitCode, len(whole.Cells))
	}
	for i, w := range whole.Cells {
		g := merged.Cells[i]
		if g.Scenario != w.Scenario || g.Lock != w.Lock || g.Applicable != w.Applicable || g.Outcome != w.Outcome || g.Verdict != w.Verdict || fmt.Sprint(g.Checks) != fmt.Sprint(w.Checks) {
			t.Errorf("cell %d: merged %s/%s %s %s %v, whole %s/%s %s %s %v", i, g.Scenario, g.Lock, g.Outcome, g.Verdict, g.Checks, w.Scenario, w.Lock, w.Outcome, w.Verdict, w.Checks)
		}
		if w.Applicable && ran[w.Scenario+"/"+w.Lock] != 1 {
			t.Errorf("%s/%s ran in %d shards, want 1", w.Scenario, w.Lock, ran[w.Scenario+"/"+w.Lock])
		}
	}
	// A shard of another catalog (its scenarios differ).
	other := filepath.Join(root, "other")
	b, err := os.ReadFile(filepath.Join(dirs[1], "matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	cat := merged.Cells[0].Scenario // any text to replace the hash with
	var mm map[string]any
	if err := json.Unmarshal(b, &mm); err != nil {
		t.Fatal(err)
	}
	mm["shard"].(map[string]any)["catalog"] = cat
	b, _ = json.Marshal(mm)
	if err := os.WriteFile(filepath.Join(other, "matrix.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{dirs[0], other, dirs[2]}, "ran catalog " + cat},
		{dirs[:2], "shard 3/3 missing"},
		{[]string{dirs[0], dirs[0], dirs[1], dirs[2]}, "shard 1/3 given twice"},
		{[]string{dirs[0], filepath.Join(root, "whole"), dirs[2]}, "is not a shard"},
	} {
		if _, err := campaign.MergeShards(c.dirs); err == nil || !strings.Contains(err.Error(), c.want) || runner.ClassOf(err) != runner.BadInput {
			t.Errorf("merge %v: %v, want exit 3 and %q", c.dirs, err, c.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	if s, err := campaign.ParseShard("2/3"); err != nil || s.Index != 2 || s.Count != 3 {
		t.Errorf("2/3: %+v %v", s, err)
	}
	for _, bad := range []string{"0/3", "4/3", "3", "a/b", "1/0", "1/1001"} {
		if _, err := campaign.ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
