package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// The acceptance command, against a redis-server this test starts:
// bench --backend external writes results.json with stats.throughput, and
// bench.json has every lock's numbers and the yardsticks.
func TestBenchExternal(t *testing.T) {
	testenv.Long(t)
	runSlot(t)
	ctx := context.Background()
	srv, err := cluster.Start(ctx, cluster.Spec{Backend: cluster.Process, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	_, ceilErr := exec.LookPath("redis-benchmark")

	dir := filepath.Join(t.TempDir(), "bench")
	code, stdout, stderr := lockchaos(t, "bench", "--lock", "simple", "--backend", "external", "--addrs", srv.Nodes[0].ServerAddr,
		"--clients", "4", "--keys", "4", "--key-dist", "per-client", "--duration", "1s", "--min-ratio", "0.01", "--out", dir)
	wantExit(t, code, 0, stdout, stderr)
	if !strings.Contains(stdout, "--min-ratio 0.01: simple ") {
		t.Errorf("the ratio gate's verdict is not shown:\n%s", stdout)
	}
	r := readResults(t, dir)
	if r.Stats.Throughput <= 0 || r.Stats.Cycles == 0 || r.Stats.Server == nil || r.Stats.Server.CommandsPerCycle < 2 {
		t.Fatalf("results.json stats: throughput %v, cycles %d, server %+v", r.Stats.Throughput, r.Stats.Cycles, r.Stats.Server)
	}
	var b campaign.Bench
	raw, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Locks) != 1 || b.Locks[0].Throughput != r.Stats.Throughput || b.Locks[0].Fairness <= 0.5 || b.SetRTTP50US <= 0 || b.Nodes != 1 {
		t.Fatalf("bench.json: %s", raw)
	}
	if ceilErr == nil {
		// Per-client keys, 4 clients on 4 keys: nothing is contended, so the
		// lock cannot beat the bare client by much, nor the server's ceiling.
		if b.CeilingCS <= 0 || b.GoRedisCS <= 0 {
			t.Fatalf("ceiling %v, bare go-redis %v with redis-benchmark on PATH", b.CeilingCS, b.GoRedisCS)
		}
		if lk := b.Locks[0].Throughput; lk > 1.5*b.GoRedisCS || lk > 1.5*b.CeilingCS {
			t.Errorf("simple lock %v cycles/s above bare go-redis %v or the ceiling %v", lk, b.GoRedisCS, b.CeilingCS)
		}
		if !strings.Contains(stdout, "Bare go-redis") || !strings.Contains(stdout, "redis-benchmark -c 4") {
			t.Errorf("bench.md lacks the yardsticks:\n%s", stdout)
		}
	}

	// Two locks, one of them fanning out: one row each, no top-level results.json.
	dir2 := filepath.Join(t.TempDir(), "bench2")
	code, stdout, stderr = lockchaos(t, "bench", "--lock", "simple,redlock", "--backend", "external", "--addrs", srv.Nodes[0].ServerAddr,
		"--clients", "3", "--keys", "1", "--duration", "1s", "--no-ceiling", "--out", dir2)
	wantExit(t, code, 0, stdout, stderr)
	for _, l := range []string{"| simple |", "| redlock |"} {
		if !strings.Contains(stdout, l) {
			t.Errorf("no row %q in:\n%s", l, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir2, "redlock", "history.lch")); err != nil {
		t.Error(err)
	}

	// compare on bench directories: every lock benched in both, a note for
	// the others; a bench against itself has no regression.
	code, stdout, stderr = lockchaos(t, "compare", dir, dir)
	wantExit(t, code, 0, stdout, stderr)
	code, stdout, stderr = lockchaos(t, "compare", dir, dir2)
	if code != 0 && code != ExitViolated {
		t.Fatalf("compare bench dirs: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "bench/simple") || !strings.Contains(stdout, "lock redlock: benched in "+dir2+" only") {
		t.Errorf("compare of bench directories:\n%s", stdout)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "bench.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = lockchaos(t, "compare", dir, bad)
	wantExit(t, code, ExitBadInput, stdout, stderr)
	if !strings.Contains(stderr, filepath.Join(bad, "bench.json")) {
		t.Errorf("a malformed bench.json is not named: %q", stderr)
	}

	// Bad input names the flag and its value, and starts nothing.
	code, stdout, stderr = lockchaos(t, "bench", "--clients", "0", "--out", filepath.Join(t.TempDir(), "b3"))
	wantExit(t, code, ExitBadInput, stdout, stderr)
	if !strings.Contains(stderr, "--clients 0") {
		t.Errorf("stderr %q does not name --clients 0", stderr)
	}
	code, stdout, stderr = lockchaos(t, "bench", "--min-ratio", "0.9", "--no-ceiling", "--out", filepath.Join(t.TempDir(), "b5"))
	wantExit(t, code, ExitBadInput, stdout, stderr)
	if !strings.Contains(stderr, "--min-ratio 0.9") {
		t.Errorf("stderr %q does not name --min-ratio", stderr)
	}
	b4 := filepath.Join(t.TempDir(), "b4")
	code, stdout, stderr = lockchaos(t, "bench", "--wait", "bogus", "--out", b4)
	wantExit(t, code, ExitBadInput, stdout, stderr)
	if !strings.Contains(stderr, `wait: "bogus"`) {
		t.Errorf("stderr %q does not name the wait option and its value", stderr)
	}
	if _, err := os.Stat(b4); err == nil {
		t.Errorf("a rejected bench left %s behind", b4)
	}
}
