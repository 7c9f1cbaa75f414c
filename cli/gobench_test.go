package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Two real benches with --format gobench: stdout is nothing but the
// benchmark file, golang.org/x/perf/benchfmt reads it without an error
// (report/testdata/gobench, a module of its own), and benchstat compares
// the two.
func TestBenchGoBenchFormat(t *testing.T) {
	runSlot(t)
	dir := t.TempDir()
	var files []string
	for i := range 2 {
		out := filepath.Join(dir, "bench"+string(rune('a'+i)))
		code, stdout, stderr := lockchaos(t, "bench", "--lock", "simple", "--backend", "process", "--nodes", "1", "--clients", "4", "--keys", "4",
			"--duration", "1s", "--no-ceiling", "--format", "gobench", "--out", out)
		wantExit(t, code, 0, stdout, stderr)
		saved, err := os.ReadFile(filepath.Join(out, "gobench.txt"))
		if err != nil || string(saved) != stdout {
			t.Fatalf("gobench.txt (%v) differs from stdout:\n%s\nstdout:\n%s", err, saved, stdout)
		}
		files = append(files, filepath.Join(out, "gobench.txt"))
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join("..", "report", "testdata", "gobench")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var got struct {
		Results []struct {
			Name   string             `json:"name"`
			Iters  int                `json:"iters"`
			Values map[string]float64 `json:"values"`
		} `json:"results"`
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(run("run", ".", files[0], files[1]), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Errors) > 0 || len(got.Results) != 2 {
		t.Fatalf("benchfmt: errors %v, %d results (want none, 2)", got.Errors, len(got.Results))
	}
	for _, r := range got.Results {
		if r.Name != "Lock/simple/clients=4/keys=4/key-dist=uniform" || r.Iters < 1 || r.Values["cycles/s"] <= 0 || r.Values["acquire-p99-ns"] <= 0 {
			t.Errorf("result %+v: want simple's line with cycles and latencies", r)
		}
	}
	out := string(run("tool", "benchstat", files[0], files[1]))
	if !strings.Contains(out, "cycles/s") || !strings.Contains(out, "Lock/simple/clients=4/keys=4/key-dist=uniform") {
		t.Errorf("benchstat:\n%s", out)
	}
	if code, _, stderr := lockchaos(t, "bench", "--format", "csv"); code != 3 || !strings.Contains(stderr, "--format") {
		t.Errorf("--format csv: exit %d, %q: want 3 naming --format", code, stderr)
	}
}
