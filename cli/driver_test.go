package cli

import (
	"fmt"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

var (
	helperMu   sync.Mutex
	helperBins = map[string]string{}
)

// helperBinary builds the program pkg (a path under the module) as name
// once per test binary, beside lockchaosBinary's (removed with it by
// TestMain).
func helperBinary(t *testing.T, name, pkg string) string {
	t.Helper()
	lockchaosBinary(t)
	helperMu.Lock()
	defer helperMu.Unlock()
	if bin, ok := helperBins[name]; ok {
		return bin
	}
	bin := filepath.Join(binDir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	helperBins[name] = bin
	return bin
}

// driverBinary builds cmd/lockchaos-driver (the built-in locks over the
// driver protocol).
func driverBinary(t *testing.T) string {
	return helperBinary(t, "lockchaos-driver", "github.com/lockchaos/lockchaos/cmd/lockchaos-driver")
}

// The built-ins through the driver protocol, on real servers: smoke is
// valid and names the library; in gc-pause the pause stops the driver
// process (its state T, read from /proc during the pause) and the
// watchdog's lease expires during it, as the in-process lock's does.
func TestDriverLockEndToEnd(t *testing.T) {
	testenv.Long(t)
	runSlot(t)
	drv := driverBinary(t)
	dir := t.TempDir()

	out := filepath.Join(dir, "smoke")
	code, stdout, stderr := lockchaos(t, "run", "smoke", "--lock", "exec:"+drv+" simple", "--backend", "process", "--duration", "2s", "--out", out, "-q", "--expect")
	wantExit(t, code, 0, stdout, stderr)
	r := readResults(t, out)
	if r.Lock != "go-simple" || r.Verdict != "valid" || r.LockConfig["library"] != "lockchaos/lockimpl.simple" {
		t.Errorf("smoke: lock %s verdict %s config %v", r.Lock, r.Verdict, r.LockConfig)
	}
	if !strings.Contains(stdout, "lock go-simple (lockchaos/lockimpl.simple") {
		t.Errorf("the report does not name the library:\n%s", stdout)
	}

	// An option the driver does not declare stops the run at start.
	code, stdout, stderr = lockchaos(t, "run", "smoke", "--lock", "exec:"+drv+" simple", "--lock-opt", "colour=blue", "--backend", "process", "--duration", "1s", "--out", filepath.Join(dir, "opt"), "-q")
	wantExit(t, code, ExitBadInput, stdout, stderr)
	if !strings.Contains(stderr, "lock option colour=blue: driver go-simple (lockchaos/lockimpl.simple (devel)) understands no options") {
		t.Errorf("an undeclared option: %s", stderr)
	}

	// A driver whose init could not connect is the machine's failure
	// (infra), not the run's input.
	code, stdout, stderr = lockchaos(t, "run", "smoke", "--lock", "exec:"+brokenDriver(t)+" unreachable simple", "--backend", "process", "--duration", "1s", "--out", filepath.Join(dir, "unreachable"), "-q")
	wantExit(t, code, ExitInfra, stdout, stderr)
	if !strings.Contains(stderr, "connect: connection refused") {
		t.Errorf("an init that could not connect: %s", stderr)
	}

	// matrix gives --lock-opt to every cell's lock: the driver refuses it
	// there too, and the cell says why.
	code, stdout, stderr = lockchaos(t, "matrix", "--locks", "exec:"+drv+" simple", "--scenarios", "smoke", "--seeds", "1", "--lock-opt", "colour=blue",
		"--backend", "process", "--out", filepath.Join(dir, "matrix-opt"))
	if code == 0 || !strings.Contains(stdout, "lock option colour=blue: driver go-simple") {
		t.Errorf("matrix --lock-opt colour=blue: exit %d, the cell does not name the refused option:\n%s\n%s", code, stdout, stderr)
	}

	out = filepath.Join(dir, "gc-pause")
	code, stdout, stderr = lockchaos(t, "run", "gc-pause", "--lock", "exec:"+drv+" watchdog", "--backend", "process", "--out", out, "-q", "--expect")
	wantExit(t, code, 0, stdout, stderr)
	r = readResults(t, out)
	stopped := false
	for _, f := range r.Faults {
		if f.Kind == "pause-client" && f.Applied {
			stopped = f.Effect["driver_state"] == "T"
			t.Logf("pause-client effect: %v", f.Effect)
		}
	}
	if !stopped {
		t.Errorf("no pause-client with the driver stopped (state T): %+v", r.Faults)
	}
	// The servers' command record names the driver's connections as the
	// client's: its commands are there before the pause, none during it
	// (the watchdog's renewals stopped with the process).
	for _, f := range r.Faults {
		if f.Kind == "pause-client" && f.Applied {
			from, _ := strconv.ParseFloat(f.Effect["paused_at_ms"], 64)
			to, _ := strconv.ParseFloat(f.Effect["resumed_at_ms"], 64)
			quietDuring(t, out, f.Target, from, to)
		}
	}
	if r.Verdict != "invalid" {
		t.Errorf("gc-pause through the driver: verdict %s, want invalid (the lease expires during the pause)", r.Verdict)
	}

	// A cut holder's driver does not renew through the cut (its links
	// are cut as well as its gate), and the run is as in process.
	out = filepath.Join(dir, "holder-partitioned")
	code, stdout, stderr = lockchaos(t, "run", "holder-partitioned", "--lock", "exec:"+drv+" watchdog", "--backend", "process", "--out", out, "-q", "--expect")
	wantExit(t, code, 0, stdout, stderr)
	for _, f := range readResults(t, out).Faults {
		if f.Kind == "cut-client" && f.Applied {
			quietDuring(t, out, f.Target, f.AtMS, f.HealedMS)
		}
	}
}

// quietDuring checks that the client named by target ("client N") has
// commands in the command record of run dir before from (ms), and none
// between from and to.
func quietDuring(t *testing.T, dir, target string, from, to float64) {
	t.Helper()
	var c int
	if _, err := fmt.Sscanf(target, "client %d", &c); err != nil {
		t.Fatalf("target %q: %v", target, err)
	}
	before, during := 0, 0
	if _, err := history.ScanFile(history.FileIn(dir), func(e *history.Event) error {
		switch t := float64(e.T) / 1e6; {
		case e.Op != history.OpCommand || e.Client != c:
		case t < from:
			before++
		case t > from+5 && t < to-5:
			during++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if before == 0 || during > 0 {
		t.Errorf("%s: client %d's commands in the command record: %d before %.0f ms, %d from then to %.0f ms; want some, then none", dir, c, before, from, during, to)
	}
}

// A lockchaos killed by SIGKILL while it runs a driver lock leaves no
// driver behind (Pdeathsig), checked by pid.
func TestSIGKILLLeavesNoDriver(t *testing.T) {
	testenv.Long(t)
	runSlot(t)
	bin, drv := lockchaosBinary(t), driverBinary(t)
	var drivers []int
	cmd := startHarness(t, bin, "process", "exec:"+drv+" simple", func(pid int) bool {
		drivers = drivers[:0]
		for _, k := range descendants(pid) {
			if strings.HasPrefix(comm(k), "lockchaos-dri") { // comm is cut at 15 bytes
				drivers = append(drivers, k)
			}
		}
		return len(drivers) > 0
	})
	killWantGone(t, cmd, "driver", drivers)
	t.Logf("%d drivers, each gone after SIGKILL of lockchaos", len(drivers))
}

// A driver lock that cannot start, and a --lock-opt that is no key=value,
// are bad input named in the error.
func TestDriverBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lock", "exec:./no-such-driver"}, `--lock exec:./no-such-driver: driver exec:./no-such-driver: cannot start`},
		{[]string{"--lock", "exec:/bin/cat"}, `a line without in_reply_to that is no event (lost, renewal): line "{\"id\":1,\"type\":\"hello\",\"protocol\":1}"`},
		{[]string{"--lock", "./no-such-lock.yaml"}, "lock file ./no-such-lock.yaml"},
		{[]string{"--lock-opt", "version"}, `--lock-opt "version": not key=value`},
	} {
		code, stdout, stderr := lockchaos(t, append([]string{"run", "smoke", "--duration", "1s", "--out", filepath.Join(t.TempDir(), "r")}, tc.args...)...)
		wantExit(t, code, ExitBadInput, stdout, stderr)
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr\n%s\nwant %s", tc.args, stderr, tc.want)
		}
	}
	// matrix and explore take --lock-opt as run does, and refuse the same
	// malformed one before anything runs.
	for _, args := range [][]string{
		{"matrix", "--locks", "simple", "--scenarios", "smoke", "--out", filepath.Join(t.TempDir(), "m")},
		{"explore", "--lock", "simple", "--budget", "5s", "--out", filepath.Join(t.TempDir(), "e")},
	} {
		code, stdout, stderr := lockchaos(t, append(args, "--lock-opt", "version")...)
		wantExit(t, code, ExitBadInput, stdout, stderr)
		if !strings.Contains(stderr, `--lock-opt "version": not key=value`) {
			t.Errorf("%s --lock-opt version: stderr\n%s", args[0], stderr)
		}
	}
}

// Warm drivers give the verdicts cold ones do (issue 43): the same cells
// and seeds with reuse (the default) and with --cold-drivers come out the
// same, check by check; the warm matrix's runs were served by reused
// processes, the cold one's never; a paused process (gc-pause) is not
// reused, so its run after starts a fresh one.
func TestWarmDriversGiveTheColdVerdicts(t *testing.T) {
	testenv.Long(t)
	runSlot(t)
	drv := driverBinary(t)
	dir := t.TempDir()
	cells := map[string]map[string]string{}
	reused := map[string]int{}
	for _, mode := range []string{"warm", "cold"} {
		args := []string{"matrix", "--locks", "exec:" + drv + " watchdog,exec:" + drv + " simple", "--scenarios", "smoke,gc-pause",
			"--seeds", "1-3", "--parallel", "1", "--backend", "process", "--out", filepath.Join(dir, mode)}
		if mode == "cold" {
			args = append(args, "--cold-drivers")
		}
		code, stdout, stderr := lockchaos(t, args...)
		wantExit(t, code, 0, stdout, stderr)
		cells[mode] = map[string]string{}
		files, _ := filepath.Glob(filepath.Join(dir, mode, "*", "*", "seed-*", "results.json"))
		if len(files) != 12 {
			t.Fatalf("%s: %d runs, want 2 scenarios × 2 locks × 3 seeds", mode, len(files))
		}
		for _, f := range files {
			r := readResults(t, filepath.Dir(f))
			rel, _ := filepath.Rel(filepath.Join(dir, mode), f)
			var checks []string
			for name, c := range r.Checks {
				checks = append(checks, name+"="+string(c.Verdict))
			}
			sort.Strings(checks)
			cells[mode][rel] = r.Verdict + " " + strings.Join(checks, ",")
			if r.LockConfig["process_reused"] == true {
				reused[mode]++
			}
		}
	}
	for cell, cold := range cells["cold"] {
		if warm := cells["warm"][cell]; warm != cold {
			t.Errorf("%s: warm %q, cold %q", cell, warm, cold)
		}
	}
	if reused["cold"] != 0 || reused["warm"] < 6 {
		t.Errorf("runs on a reused process: warm %d (want at least 6 of 12), cold %d (want 0)", reused["warm"], reused["cold"])
	}
}

// An API mode catches a control that the default mode does not: the
// driver control scoped-del (drivers/python/controls) releases with an
// owner check in its explicit idiom (api acquire, the default) and with a
// plain DEL when its context manager exits (api with). Judged against the
// expectations of its capabilities' reference (simple), expire-then-unlock
// passes the default mode on every seed and fails the scoped one's unlock
// check (another client's key deleted) on every seed: the matrix exits 1.
func TestAPIModeCatchesAScopedControl(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	runSlot(t)
	dir := t.TempDir()
	ctl := filepath.Join("..", "drivers", "python", "controls")
	code, stdout, stderr := lockchaos(t, "matrix", "--locks", filepath.Join(ctl, "scoped-del.yaml")+","+filepath.Join(ctl, "scoped-del-with.yaml"),
		"--scenarios", "expire-then-unlock", "--seeds", "1-3", "--backend", "process", "--out", dir)
	wantExit(t, code, ExitViolated, stdout, stderr)
	for _, lock := range []string{"scoped-del", "scoped-del-with"} {
		files, _ := filepath.Glob(filepath.Join(dir, "expire-then-unlock", lock, "seed-*", "results.json"))
		if len(files) != 3 {
			t.Fatalf("%s: %d runs, want 3 seeds", lock, len(files))
		}
		for _, f := range files {
			r := readResults(t, filepath.Dir(f))
			unlock := r.Checks["unlock"].Verdict
			switch {
			case lock == "scoped-del" && r.Verdict != "valid":
				t.Errorf("%s: the default (explicit) mode: %s, want valid: %+v", f, r.Verdict, r.Checks)
			case lock == "scoped-del-with" && unlock != "invalid":
				t.Errorf("%s: the scoped mode's unlock %s, want invalid (a plain DEL of another client's key)", f, unlock)
			}
		}
	}
}

// Several clients in one driver process (the lock option tasks) catch a
// control that one client a process cannot: shared-lease
// (drivers/node/controls) keeps the lock it holds in its module, so with
// four clients sharing a process one client's release deletes another's
// lock. On the handlers scenario (8 clients over 2 keys, holds of 60 ms,
// no fault) it is valid a process a client, and with tasks 4 its mutex is
// invalid on every seed (another client walked in) and its unlock unknown:
// the deletes came on the process's shared connection, which ties them to
// no client. A correct lock on the same kit (the worked example) and
// node-redlock stay valid with tasks 4 on every check that can judge them
// (unlock unknown for the same reason: matrix exits 2, unknown).
func TestTasksCatchALeaseKeptInTheProcess(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "LOCKCHAOS_REQUIRE_DRIVERS", "node not on PATH")
	}
	runSlot(t)
	dir := t.TempDir()
	ctl := filepath.Join("..", "drivers", "node", "controls")
	scen := filepath.Join(ctl, "handlers.yaml")
	code, stdout, stderr := lockchaos(t, "matrix", "--locks", filepath.Join(ctl, "shared-lease.yaml")+","+filepath.Join(ctl, "shared-lease-tasks.yaml"),
		"--scenarios", scen, "--seeds", "1-3", "--backend", "process", "--out", filepath.Join(dir, "control"))
	wantExit(t, code, ExitViolated, stdout, stderr)
	for _, lock := range []string{"shared-lease", "shared-lease-tasks"} {
		files, _ := filepath.Glob(filepath.Join(dir, "control", "handlers", lock, "seed-*", "results.json"))
		if len(files) != 3 {
			t.Fatalf("%s: %d runs, want 3 seeds", lock, len(files))
		}
		for _, f := range files {
			r := readResults(t, filepath.Dir(f))
			switch {
			case lock == "shared-lease" && r.Verdict != "valid":
				t.Errorf("%s: a process a client: %s, want valid: %+v", f, r.Verdict, r.Checks)
			case lock == "shared-lease-tasks" && r.Checks["mutex"].Verdict != "invalid":
				t.Errorf("%s: tasks 4: mutex %s, want invalid (one client's release deleted another's lock)", f, r.Checks["mutex"].Verdict)
			case lock == "shared-lease-tasks" && r.Checks["unlock"].Verdict != "unknown":
				t.Errorf("%s: tasks 4: unlock %s, want unknown (every delete came on the shared connection)", f, r.Checks["unlock"].Verdict)
			}
		}
	}
	code, stdout, stderr = lockchaos(t, "matrix", "--locks", filepath.Join("..", "examples", "node-driver", "my-lock.yaml")+",node-redlock", "--lock-opt", "tasks=4",
		"--scenarios", scen+",smoke,cancelled-request", "--seeds", "1-3", "--backend", "process", "--out", filepath.Join(dir, "correct"))
	wantExit(t, code, ExitUnknown, stdout, stderr)
	files, _ := filepath.Glob(filepath.Join(dir, "correct", "*", "*", "seed-*", "results.json"))
	if len(files) != 18 {
		t.Fatalf("%d runs of the correct locks, want 3 scenarios × 2 locks × 3 seeds", len(files))
	}
	for _, f := range files {
		for check, v := range readResults(t, filepath.Dir(f)).Checks {
			if want := map[bool]string{true: "unknown", false: "valid"}[check == "unlock"]; string(v.Verdict) != want {
				t.Errorf("%s: %s %s, want %s", f, check, v.Verdict, want)
			}
		}
	}
}
