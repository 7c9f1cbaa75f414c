package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// A scenario whose expect: names a driver lock that --lock registers
// (exec:<command>: its hello's name, go-fenced) runs: the lock is resolved
// before the scenario is validated, in run and in matrix (both exited 3,
// "expect.go-fenced: unknown lock"). Each command registers a lock of its
// own (the registry is the process's) that no other test registers.
func TestExpectNamesADriverLock(t *testing.T) {
	testenv.Need(t, "redis-server")
	runSlot(t)
	drv := driverBinary(t)
	dir := t.TempDir()
	for _, c := range []struct{ cmd, lock string }{{"run", "fenced"}, {"matrix", "reentrant"}} {
		sc := filepath.Join(dir, c.cmd+".yaml")
		if err := os.WriteFile(sc, []byte(`name: driver-expect-`+c.cmd+`
duration: 1s
workload: {clients: 2, keys: 1}
expect:
  go-`+c.lock+`: {mutex: valid, "*": any}
  simple: {mutex: valid}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		lock, out := "exec:"+drv+" "+c.lock, filepath.Join(dir, c.cmd)
		args := []string{"run", sc, "--lock", lock, "--backend", "process", "--out", out, "-q", "--expect"}
		if c.cmd == "matrix" {
			args = []string{"matrix", "--locks", lock, "--scenarios", sc, "--seeds", "1", "--backend", "process", "--out", out}
		}
		code, stdout, stderr := lockchaos(t, args...)
		wantExit(t, code, ExitOK, stdout, stderr)
	}
}

// An explore finding of an exec: driver lock replays as it is printed:
// its --lock is the exec: command (quoted), which registers the name its
// expect: gives (the printed `--lock go-del-no-owner` was unknown in
// another process, and with exec: the expect: was refused).
func TestDriverFindingReplaysAsPrinted(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	runSlot(t)
	drv := driverBinary(t)
	dir := t.TempDir()
	lock := "exec:" + drv + " del-no-owner"
	code, stdout, stderr := lockchaos(t, "explore", "--lock", lock, "--budget", "2m", "--max-findings", "1", "--kinds", "pause-client",
		"--backend", "process", "--out", filepath.Join(dir, "explore"))
	wantExit(t, code, ExitViolated, stdout, stderr)
	replay := ""
	for _, l := range strings.Split(stdout, "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(l), "replay: "); ok {
			replay = r
			break
		}
	}
	words := shellWords(replay, nil)
	if len(words) < 2 || words[0] != "lockchaos" || !strings.Contains(replay, "--lock '"+lock+"'") {
		t.Fatalf("replay %q: want lockchaos run … --lock '%s' --expect", replay, lock)
	}
	args := append(words[1:], "--backend", "process", "-q", "--out", filepath.Join(dir, "replay"))
	code, stdout, stderr = lockchaos(t, args...)
	// It runs as printed: the lock resolves and the expect: that names it
	// loads (before, exit 3: "expect.go-del-no-owner: unknown lock"). Its
	// verdict on the scenario's one seed is the finding's on that seed,
	// which its confirmation over five seeds need not have had on every
	// one (a CI rehearsal: unlock valid on the replay's seed), so exit 1
	// (not as expected) is a run that happened, too.
	if code != ExitOK && code != ExitViolated || !strings.Contains(stdout, "lock go-del-no-owner") || !strings.Contains(stdout, "unlock") {
		t.Fatalf("replay exit %d, want a run judged against its expect: (0 or 1)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
