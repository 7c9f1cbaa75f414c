package report

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// benchOf is a bench of two locks; scale changes the simple lock's numbers
// (a second commit's run).
func benchOf(scale float64) *metrics.Bench {
	lat := func(p50, p99 float64) metrics.Latency {
		return metrics.Latency{Count: 1000, P50: p50 * scale, P99: p99 * scale}
	}
	return &metrics.Bench{Clients: 50, Keys: 50, Nodes: 5, KeyDist: "uniform", Duration: "5s", Mode: "closed", Backend: "process", Machine: "2 cores, Intel Xeon",
		Repeat: 3, Locks: []metrics.BenchLock{
			{Lock: "simple", Kind: "single", Throughput: 12000 / scale, Cycles: int64(60000 / scale), FailedAcq: 120, Fairness: 0.98,
				Runs:      []float64{11800 / scale, 12000 / scale, 12500 / scale},
				LatencyUS: map[string]metrics.Latency{"acquire": lat(900, 4000), "release": lat(300, 1500), "cycle": lat(4000, 9000), "handoff": lat(450, 2500)},
				Server:    &metrics.ServerCost{CommandsPerCycle: 2, UsecPerCycle: 6.5}},
			{Lock: "redlock", Kind: "redlock", Throughput: 3000, Cycles: 15000, Fairness: 0.9,
				LatencyUS: map[string]metrics.Latency{"acquire": lat(3000, 12000), "release": lat(1000, 5000), "cycle": lat(16000, 30000)}},
		}}
}

// gobenchRead parses files with golang.org/x/perf/benchfmt (the nested
// module testdata/gobench: x/perf stays out of the harness's module).
type gobenchRead struct {
	Results []struct {
		File   string             `json:"file"`
		Name   string             `json:"name"`
		Iters  int                `json:"iters"`
		Config map[string]string  `json:"config"`
		Values map[string]float64 `json:"values"`
	} `json:"results"`
	Better map[string]int `json:"better"`
	Errors []string       `json:"errors"`
}

func gobenchTool(t *testing.T, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the benchfmt reader and benchstat")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("testdata", "gobench")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// Two bench outputs read back with benchfmt as they were written, and
// benchstat compares them.
func TestGoBenchWithBenchstat(t *testing.T) {
	dir := t.TempDir()
	old, cur := filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")
	for path, scale := range map[string]float64{old: 1, cur: 1.25} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteGoBench(f, benchOf(scale)); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var got gobenchRead
	if err := json.Unmarshal(gobenchTool(t, "run", ".", old, cur), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Errors) > 0 {
		b, _ := os.ReadFile(old)
		t.Fatalf("benchfmt: %v\n%s", got.Errors, b)
	}
	// Per file: simple's three runs and redlock's one.
	if len(got.Results) != 8 {
		t.Fatalf("%d results, want 8 (simple: a line per run, redlock: one; two files)", len(got.Results))
	}
	want := benchOf(1).Locks[0]
	medians := 0
	for _, r := range got.Results {
		if r.Config["lockchaos-backend"] != "process" || r.Config["cpu"] != "2 cores, Intel Xeon" || r.Config["pkg"] != "github.com/lockchaos/lockchaos" {
			t.Errorf("%s: config %v", r.Name, r.Config)
		}
		if r.File != old || !strings.HasPrefix(r.Name, "Lock/simple/") {
			continue
		}
		if r.Name != "Lock/simple/clients=50/keys=50/key-dist=uniform" {
			t.Errorf("name %q", r.Name)
		}
		if cps := r.Values["cycles/s"]; math.Abs(r.Values["ns/op"]-1e9/cps) > 1e-3*1e9/cps {
			t.Errorf("ns/op %v is not 1e9 / cycles/s %v", r.Values["ns/op"], cps)
		}
		if _, ok := r.Values["acquire-p99-ns"]; !ok {
			continue
		}
		medians++
		for unit, v := range map[string]float64{"cycles/s": want.Throughput, "acquire-p50-ns": 900e3, "acquire-p99-ns": 4000e3, "release-p99-ns": 1500e3,
			"cycle-p99-ns": 9000e3, "handoff-p50-ns": 450e3, "handoff-p99-ns": 2500e3, "failed-acquires/op": 120.0 / 60000, "fairness": 0.98,
			"redis-cmds/op": 2, "redis-us/op": 6.5} {
			if math.Abs(r.Values[unit]-v) > 1e-5*math.Abs(v) {
				t.Errorf("%s = %v, want %v", unit, r.Values[unit], v)
			}
		}
		if r.Iters != 60000 {
			t.Errorf("iterations %d, want the cycles, 60000", r.Iters)
		}
	}
	if medians != 1 {
		t.Errorf("%d lines of simple carry the latencies, want 1 (the median run)", medians)
	}
	if got.Better["cycles/s"] != 1 || got.Better["acquire-p99-ns"] != -1 || got.Better["fairness"] != 1 {
		t.Errorf("unit metadata: %v", got.Better)
	}

	out := string(gobenchTool(t, "tool", "benchstat", old, cur))
	// benchstat shows the -ns units in seconds (acquire-p99-sec).
	for _, w := range []string{"cycles/s", "acquire-p99-sec", "handoff-p50-sec", "Lock/simple/clients=50/keys=50/key-dist=uniform", "Lock/redlock"} {
		if !strings.Contains(out, w) {
			t.Errorf("benchstat's comparison does not mention %q:\n%s", w, out)
		}
	}
	t.Logf("benchstat old new:\n%s", out)
}
