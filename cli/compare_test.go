package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// compare given two matrix directories compares their runs' verdicts check
// by check: 0 when every run agrees, 1 naming the run and check that does
// not, and the Markdown says the same.
func TestCompareMatrixDirectories(t *testing.T) {
	write := func(name string, gcMutex string, wall float64, parallel int) string {
		dir := filepath.Join(t.TempDir(), name)
		m := &metrics.Matrix{WallMS: wall, Parallel: parallel, Cells: []metrics.Cell{
			{Scenario: "gc-pause", Lock: "simple", Applicable: true, Outcome: "as-expected", Seeds: []metrics.SeedRun{
				{Seed: 1, Checks: map[string]string{"mutex": "invalid"}, Phases: &metrics.Phases{Workload: 3000}},
				{Seed: 2, Checks: map[string]string{"mutex": gcMutex}, Phases: &metrics.Phases{Workload: 3000}}}},
		}}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := metrics.WriteJSON(filepath.Join(dir, metrics.MatrixFile), m); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	serial, packed := write("serial", "invalid", 8000, 1), write("packed", "invalid", 2000, 8)
	code, stdout, stderr := lockchaos(t, "compare", serial, packed)
	if code != 0 || !strings.Contains(stdout, "2 runs in both matrices, 2 checks compared: 0 differ") || !strings.Contains(stdout, "4.00× as fast") {
		t.Errorf("same verdicts: exit %d\n%s%s", code, stdout, stderr)
	}
	flipped := write("flipped", "valid", 2000, 8)
	md := filepath.Join(t.TempDir(), "compare.md")
	code, stdout, stderr = lockchaos(t, "compare", serial, flipped, "--markdown", md)
	if code != 1 || !strings.Contains(stdout, "gc-pause/simple seed 2") || !strings.Contains(stdout, "1 differ") {
		t.Errorf("a flipped verdict: exit %d, want 1 naming gc-pause/simple seed 2\n%s%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "| gc-pause/simple seed 2 | mutex | invalid | valid |") {
		t.Errorf("markdown: %v\n%s", err, b)
	}
}
