package cli

// End-to-end tests of the CLI: each calls Main as the binary does (or, for
// Ctrl-C, runs the built binary) and checks the exit code, the output and
// the run directory. They start redis-server from PATH (backend process).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/scenarios"
)

// runSlots bounds the lockchaos runs this package has going at once. The
// runner package's tests run one at a time in parallel with this package
// (go test -p), so 1 here keeps the machine at two runs at most.
var runSlots = make(chan struct{}, 1)

// runSlot holds one run slot until the test ends.
func runSlot(t *testing.T) {
	t.Helper()
	runSlots <- struct{}{}
	t.Cleanup(func() { <-runSlots })
}

// syncBuffer is a bytes.Buffer safe for writers on other goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lockchaos calls Main with args and returns its exit code and output.
func lockchaos(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb syncBuffer
	start := time.Now()
	code = Main(args, &out, &errb)
	t.Logf("lockchaos %s → exit %d (%.1fs)", strings.Join(args, " "), code, time.Since(start).Seconds())
	return code, out.String(), errb.String()
}

// wantExit fails the test when code is not want, showing the output.
func wantExit(t *testing.T, code, want int, stdout, stderr string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

func readResults(t *testing.T, dir string) *metrics.Results {
	t.Helper()
	r, err := metrics.ReadResults(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// copyRun copies a run directory's top-level files into a new directory.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func hasNote(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// runSmoke runs the smoke scenario with the simple lock for 1s on backend
// (extra flags added), wants exit code want and returns the run directory
// and stdout.
func runSmoke(t *testing.T, backend string, want int, extra ...string) (dir, stdout string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "run")
	args := append([]string{"run", "smoke", "--lock", "simple", "--backend", backend, "--duration", "1s", "--out", dir, "-q"}, extra...)
	code, stdout, stderr := lockchaos(t, args...)
	wantExit(t, code, want, stdout, stderr)
	return dir, stdout
}

// remoteRef matches a src= or href= attribute pointing off the machine
// (http://, https:// or protocol-relative //).
var remoteRef = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//`)

func TestRunSmokeWritesRunDirectory(t *testing.T) {
	t.Parallel()
	runSlot(t)
	dir, stdout := runSmoke(t, "process", 0)
	if !strings.Contains(stdout, "run directory: "+dir) {
		t.Errorf("stdout does not name the run directory:\n%s", stdout)
	}

	for _, f := range []string{"history.lch", "results.json", "summary.md", "report.html", "scenario.yaml",
		"acquire.hgrm", "release.hgrm", "cycle.hgrm",
		"latency-percentiles.png", "latency-percentiles.svg", "latency-over-time.png", "latency-over-time.svg",
		"throughput-over-time.png", "throughput-over-time.svg"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		} else if st.Size() == 0 {
			t.Errorf("%s is empty", f)
		}
	}

	r := readResults(t, dir)
	if r.Verdict != "valid" || r.ExitCode != 0 {
		t.Errorf("verdict %q exit_code %d, want valid 0", r.Verdict, r.ExitCode)
	}
	if r.Stats.Throughput <= 0 {
		t.Errorf("stats.throughput = %v, want > 0", r.Stats.Throughput)
	}
	if c, ok := r.Checks["mutex"]; !ok || c.Verdict != "valid" {
		t.Errorf("checks.mutex = %+v (present %v), want valid", c, ok)
	}
	if r.Scenario != "smoke" || r.Lock != "simple" || r.Backend != "process" {
		t.Errorf("results name %s/%s on %s, want smoke/simple on process", r.Scenario, r.Lock, r.Backend)
	}
	// A 1s workload: the run lasts at least that, and started within the test.
	if r.DurationMS < 1000 || r.DurationMS > 60_000 || time.Since(r.StartedAt) > 5*time.Minute || time.Since(r.StartedAt) < 0 {
		t.Errorf("started_at %v, duration_ms %v: not this run's", r.StartedAt, r.DurationMS)
	}

	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if m := remoteRef.FindAll(html, 5); len(m) > 0 {
		t.Errorf("report.html references remote resources: %q", m)
	}
	if !bytes.Contains(html, []byte("<img")) {
		t.Errorf("report.html embeds no image")
	}
}

func TestRemoteRefPattern(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		`<script src="https://cdn.example/x.js">`:    true,
		`<link href='http://example/x.css'>`:         true,
		`<img SRC = "//example/x.png">`:              true,
		`<img src="data:image/png;base64,AAAA">`:     false,
		`<a href="#v1">`:                             false,
		`<p>see https://example.org for details</p>`: false,
	} {
		if got := remoteRef.MatchString(s); got != want {
			t.Errorf("remoteRef.MatchString(%q) = %v, want %v", s, got, want)
		}
	}
}

// gc-pause with the simple lock is a violation; check re-checks the saved
// run with the same outcome, rejects a corrupt line and skips a torn tail.
func TestGCPauseRunAndCheck(t *testing.T) {
	t.Parallel()
	runSlot(t)
	dir := filepath.Join(t.TempDir(), "run")
	// The JSONL form, so the subtests can corrupt a line of text.
	code, stdout, stderr := lockchaos(t, "run", "gc-pause", "--lock", "simple", "--backend", "process", "--out", dir, "-q", "--history", "jsonl")
	wantExit(t, code, 1, stdout, stderr)
	r := readResults(t, dir)
	if r.Verdict != "invalid" || r.ExitCode != 1 {
		t.Errorf("verdict %q exit_code %d, want invalid 1", r.Verdict, r.ExitCode)
	}
	mutex := 0
	for _, v := range r.Violations {
		if v.Check != "mutex" {
			continue
		}
		mutex++
		if v.Cause == "" || v.Explanation == "" {
			t.Errorf("mutex violation without cause or explanation: %+v", v)
		}
	}
	if mutex == 0 {
		t.Fatalf("no mutex violation listed; violations: %+v", r.Violations)
	}

	t.Run("check", func(t *testing.T) {
		code, stdout, stderr := lockchaos(t, "check", dir)
		wantExit(t, code, 1, stdout, stderr)
		again := readResults(t, dir)
		if again.Verdict != "invalid" || again.Checks["mutex"].Verdict != "invalid" || len(again.Violations) != len(r.Violations) {
			t.Errorf("re-check: verdict %s, mutex %s, %d violations; run: invalid, invalid, %d",
				again.Verdict, again.Checks["mutex"].Verdict, len(again.Violations), len(r.Violations))
		}
	})

	hist, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(hist), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 10 {
		t.Fatalf("history has %d lines", len(lines))
	}

	t.Run("compact export checks the same", func(t *testing.T) {
		d := copyRun(t, dir)
		code, stdout, stderr := lockchaos(t, "export", d, "--compact")
		wantExit(t, code, 0, stdout, stderr)
		if err := os.Remove(filepath.Join(d, "history.jsonl")); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr = lockchaos(t, "check", d)
		wantExit(t, code, 1, stdout, stderr)
		c := readResults(t, d)
		if c.Verdict != r.Verdict || len(c.Violations) != len(r.Violations) {
			t.Errorf("from history.lch: verdict %s, %d violations; from history.jsonl: %s, %d", c.Verdict, len(c.Violations), r.Verdict, len(r.Violations))
		}
		code, stdout, stderr = lockchaos(t, "export", d, "--jsonl")
		wantExit(t, code, 0, stdout, stderr)
		// Event for event as decoded (meta numbers are float64 in any
		// reader, so start_unix_ns is not byte-exact after a round trip).
		orig, _, err1 := history.ReadFile(filepath.Join(dir, "history.jsonl"))
		back, _, err2 := history.ReadFile(filepath.Join(d, "history.jsonl"))
		if err1 != nil || err2 != nil || !reflect.DeepEqual(orig, back) {
			t.Errorf("export --jsonl of the compact form: %d events, the original %d (%v, %v)", len(back), len(orig), err1, err2)
		}
	})

	t.Run("corrupt middle line", func(t *testing.T) {
		d := copyRun(t, dir)
		bad := len(lines) / 2 // 0-based; line bad+1 in the file
		corrupt := append(append([]string{}, lines[:bad]...), "{\"t\": 12, \"op\": \n")
		corrupt = append(corrupt, lines[bad+1:]...)
		if err := os.WriteFile(filepath.Join(d, "history.jsonl"), []byte(strings.Join(corrupt, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := lockchaos(t, "check", d)
		wantExit(t, code, 3, stdout, stderr)
		if want := fmt.Sprintf("line %d:", bad+1); !strings.Contains(stderr, want) {
			t.Errorf("message does not name %q: %s", want, stderr)
		}
	})

	t.Run("torn last line", func(t *testing.T) {
		d := copyRun(t, dir)
		last := strings.TrimSuffix(lines[len(lines)-1], "\n")
		torn := strings.Join(lines[:len(lines)-1], "") + last[:len(last)/2]
		if err := os.WriteFile(filepath.Join(d, "history.jsonl"), []byte(torn), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := lockchaos(t, "check", d)
		wantExit(t, code, 1, stdout, stderr)
		tr := readResults(t, d)
		if !hasNote(tr.Notes, "torn") {
			t.Errorf("results.json notes do not mention the torn line: %q", tr.Notes)
		}
		if tr.Events != len(lines)-1 {
			t.Errorf("events = %d, want %d (every line but the torn one)", tr.Events, len(lines)-1)
		}
	})
}

// With --expect, the exit code follows the scenario's expectation: the
// simple lock's violation is expected; fenced keeps the resource safe.
func TestGCPauseExpect(t *testing.T) {
	t.Parallel()
	for _, lock := range []string{"simple", "fenced"} {
		t.Run(lock, func(t *testing.T) {
			runSlot(t)
			dir := filepath.Join(t.TempDir(), "run")
			code, stdout, stderr := lockchaos(t, "run", "gc-pause", "--lock", lock, "--backend", "process", "--expect", "--out", dir, "-q")
			wantExit(t, code, 0, stdout, stderr)
			r := readResults(t, dir)
			if r.Outcome != "as-expected" {
				t.Errorf("outcome %q, want as-expected; notes %q", r.Outcome, r.Notes)
			}
			if r.Checks["mutex"].Verdict != "invalid" {
				t.Errorf("checks.mutex = %q, want invalid (the pause breaks every lease)", r.Checks["mutex"].Verdict)
			}
			wantRes := map[string]string{"simple": "invalid", "fenced": "valid"}[lock]
			if got := string(r.Checks["resource"].Verdict); got != wantRes {
				t.Errorf("checks.resource = %q, want %q", got, wantRes)
			}
		})
	}
}

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Bad input exits 3 before anything runs, and the message names the field
// and the bad value.
func TestBadInput(t *testing.T) {
	t.Parallel()
	const head = "name: bad\ntopology: single\n"
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown field", []string{"run", writeScenario(t, head+"duration: 1s\nbogus_field: 3\n")}, []string{"bogus_field"}},
		{"duration banana", []string{"run", writeScenario(t, head+"duration: banana\n")}, []string{"duration:", "banana"}},
		{"fault point", []string{"run", writeScenario(t, head+"duration: 1s\nfaults:\n  - {kind: pause-client, at: 100ms, target: holder, point: in-wirte, duration: 100ms}\n")},
			[]string{"point:", `"in-wirte"`}},
		{"clients", []string{"run", "smoke", "--clients", "-1"}, []string{"--clients", "-1"}},
		{"lock", []string{"run", "smoke", "--lock", "nosuchlock"}, []string{"--lock", `"nosuchlock"`}},
		{"backend", []string{"run", "smoke", "--backend", "nosuch"}, []string{"backend", `"nosuch"`}},
		{"history form", []string{"run", "smoke", "--history", "yaml"}, []string{"--history", `"yaml"`}},
		{"max history", []string{"run", "smoke", "--max-history", "lots"}, []string{"--max-history", `"lots"`}},
		// Issue 16: faults that could not take effect are refused up front.
		{"fault after the run", []string{"run", "../scenarios/testdata/bad/fault-after-end.yaml"},
			[]string{"faults[0].at: 5s", "duration 2s"}},
		{"no such client", []string{"run", "../scenarios/testdata/bad/no-such-client.yaml"},
			[]string{`faults[0].target: "client:99"`, "workload.clients: 3"}},
		{"client gone after --clients", []string{"run", "restart-empty", "--clients", "1"},
			[]string{"after flags", `faults[1].target: "client:1"`, "workload.clients: 1"}},
		{"fault after --duration", []string{"run", "gc-pause", "--duration", "400ms"},
			[]string{"after flags", "faults[0].at: 500ms", "duration 400ms"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			code, stdout, stderr := lockchaos(t, append(c.args, "--out", dir, "-q")...)
			wantExit(t, code, 3, stdout, stderr)
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("message does not name %q: %s", w, stderr)
				}
			}
			if _, err := os.Stat(history.FileIn(dir)); err == nil {
				t.Errorf("bad input still ran: %s exists", history.FileIn(dir))
			}
		})
	}
}

func TestCompareAndThreshold(t *testing.T) {
	t.Parallel()
	runSlot(t)
	a, _ := runSmoke(t, "process", 0)
	aRes := filepath.Join(a, "results.json")

	t.Run("same", func(t *testing.T) {
		code, stdout, stderr := lockchaos(t, "compare", aRes, aRes)
		wantExit(t, code, 0, stdout, stderr)
		if !strings.Contains(stdout, "throughput") {
			t.Errorf("comparison does not show throughput:\n%s", stdout)
		}
	})

	t.Run("regressed", func(t *testing.T) {
		raw, err := os.ReadFile(aRes)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		stats := doc["stats"].(map[string]any)
		stats["throughput"] = stats["throughput"].(float64) * 3
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		b := filepath.Join(t.TempDir(), "results.json")
		if err := os.WriteFile(b, out, 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := lockchaos(t, "compare", b, aRes)
		wantExit(t, code, 1, stdout, stderr)
		// The other direction is an improvement, not a regression.
		code, stdout, stderr = lockchaos(t, "compare", aRes, b)
		wantExit(t, code, 0, stdout, stderr)
	})

	t.Run("threshold", func(t *testing.T) {
		dir, _ := runSmoke(t, "process", 1, "--threshold", "throughput > 1e12")
		r := readResults(t, dir)
		if r.Verdict != "valid" {
			t.Errorf("verdict %q, want valid (only the threshold fails)", r.Verdict)
		}
		if len(r.Thresholds) != 1 || r.Thresholds[0].Passed {
			t.Errorf("thresholds = %+v, want one failed", r.Thresholds)
		}
		md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range strings.Split(string(md), "\n") {
			if strings.Contains(l, "throughput > 1e12") && strings.Contains(l, "FAIL") {
				found = true
			}
		}
		if !found {
			t.Errorf("summary.md does not list the failed threshold:\n%s", md)
		}
	})
}

func TestRunEmbedded(t *testing.T) {
	t.Parallel()
	runSlot(t)
	dir, _ := runSmoke(t, "embedded", 0)
	r := readResults(t, dir)
	if r.Verdict != "valid" || r.Backend != "embedded" {
		t.Errorf("verdict %q on %q, want valid on embedded", r.Verdict, r.Backend)
	}
	if c, ok := r.Checks["unlock"]; ok {
		t.Errorf("unlock check present (%+v) without keyspace notifications", c)
	}
	if !hasNote(r.Notes, "unlock check not run") {
		t.Errorf("no note says why the unlock check is missing: %q", r.Notes)
	}
}

// lockchaosBinary builds the command into a temporary directory, with the
// race detector when this test binary has it.
// The binary is built once per test binary (each build under -race takes
// tens of seconds) and removed by TestMain.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	// Under GitHub Actions every run of these tests would append to the
	// job's summary; the tests that mean to set it set their own.
	os.Unsetenv(StepSummaryEnv)
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func lockchaosBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "lockchaos-test-bin-"); binErr != nil {
			return
		}
		bin := filepath.Join(binDir, "lockchaos")
		args := []string{"build", "-o", bin}
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "-race" && s.Value == "true" {
					args = append(args, "-race")
				}
			}
		}
		cmd := exec.Command("go", append(args, "github.com/lockchaos/lockchaos")...)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binPath = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// descendants lists pid's child processes, recursively.
func descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
				out = append(out, descendants(c)...)
			}
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// Ctrl-C stops a run: it is checked (unknown: interrupted), results.json is
// written and every redis-server it started is gone.
func TestInterruptStopsRunAndServers(t *testing.T) {
	t.Parallel()
	runSlot(t) // the build too: linking with -race would starve a run
	bin := lockchaosBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	var stdout, stderr syncBuffer
	cmd := exec.Command(bin, "run", "smoke", "--lock", "simple", "--backend", "process", "--duration", "30s", "--out", dir, "-q")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	done := false
	t.Cleanup(func() {
		if !done {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-exited
		}
	})

	// Wait for the run to have its server and be ~1.5 s in.
	var kids []int
	for {
		kids = descendants(cmd.Process.Pid)
		servers := 0
		for _, k := range kids {
			if comm(k) == "redis-server" {
				servers++
			}
		}
		if servers > 0 && time.Since(start) >= 1500*time.Millisecond {
			break
		}
		select {
		case waitErr = <-exited:
			done = true
			t.Fatalf("lockchaos exited before the interrupt: %v\nstderr:\n%s", waitErr, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no redis-server child after %v (children %v)\nstderr:\n%s", time.Since(start), kids, stderr.String())
		}
	}
	t.Logf("children before the interrupt: %v", kids)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case waitErr = <-exited:
		done = true
	case <-time.After(15 * time.Second):
		t.Fatalf("lockchaos still running 15s after SIGINT\nstderr:\n%s", stderr.String())
	}
	code := cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		t.Fatal(waitErr)
	}
	wantExit(t, code, 2, stdout.String(), stderr.String())

	r := readResults(t, dir)
	if r.ExitCode != 2 || !hasNote(r.Notes, "interrupted") {
		t.Errorf("results.json: exit_code %d, notes %q; want 2 and an interrupted note", r.ExitCode, r.Notes)
	}
	for _, pid := range kids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d (%s) started by the run is still there after it exited: kill(0) = %v", pid, comm(pid), err)
		}
	}
}

// listRows runs `list what` and returns its table as first column →
// second column.
func listRows(t *testing.T, what string) (rows map[string]string, stdout string) {
	t.Helper()
	code, stdout, stderr := lockchaos(t, "list", what)
	wantExit(t, code, 0, stdout, stderr)
	rows = map[string]string{}
	for i, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		f := strings.Fields(l)
		if i == 0 || len(f) < 2 {
			continue
		}
		rows[f[0]] = f[1]
	}
	return rows, stdout
}

func TestListLocks(t *testing.T) {
	t.Parallel()
	rows, _ := listRows(t, "locks")
	infos := lockimpl.List()
	if len(infos) < 15 {
		t.Fatalf("only %d locks registered", len(infos))
	}
	for _, l := range infos {
		if got, ok := rows[l.Name]; !ok || got != string(l.Kind) {
			t.Errorf("lock %s: listed with kind %q (listed %v), want %q", l.Name, got, ok, l.Kind)
		}
	}
	for name, kind := range map[string]string{"simple": "correct", "fenced": "correct", "redlock": "correct",
		"watch-unlock": "control", "del-no-owner": "broken", "get-del": "broken", "redsync": "adapter"} {
		if rows[name] != kind {
			t.Errorf("lock %s listed as %q, want %q", name, rows[name], kind)
		}
	}
}

func TestListScenarios(t *testing.T) {
	t.Parallel()
	rows, stdout := listRows(t, "scenarios")
	names := scenarios.BuiltinNames()
	if len(names) < 18 {
		t.Fatalf("only %d builtin scenarios", len(names))
	}
	sweep := scenarios.SweepNames()
	if len(sweep) == 0 {
		t.Fatal("no sweep scenarios")
	}
	names = append(names, sweep...) // the sweep is listed too
	for _, n := range names {
		if _, ok := rows[n]; !ok {
			t.Errorf("scenario %s not listed", n)
		}
	}
	if len(rows) != len(names) {
		t.Errorf("%d scenarios listed, %d built in:\n%s", len(rows), len(names), stdout)
	}
}

// A run that reaches --max-history stops cleanly: exit 2, verdict unknown
// (nothing was found in what ran), the reason in the notes, the history
// readable and not far past the limit. A disk with less than
// --min-free-disk free refuses the run before anything starts (exit 4).
func TestRunLimits(t *testing.T) {
	t.Parallel()
	runSlot(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := lockchaos(t, "run", "contention", "--lock", "simple", "--backend", "process", "--duration", "60s",
		"--clients", "10", "--keys", "10", "--max-history", "1MiB", "--out", dir, "-q")
	wantExit(t, code, 2, stdout, stderr)
	r := readResults(t, dir)
	if r.Verdict != "unknown" || !hasNote(r.Notes, "max-history 1MiB") {
		t.Errorf("verdict %s, notes %q: want unknown and the limit named", r.Verdict, r.Notes)
	}
	st, err := os.Stat(filepath.Join(dir, "history.lch"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 1<<20 || st.Size() > 4<<20 {
		t.Errorf("history is %d bytes: want it stopped soon after 1 MiB", st.Size())
	}
	if _, info, err := history.ReadFile(filepath.Join(dir, "history.lch")); err != nil || info.Torn {
		t.Errorf("history after the stop: %v (torn %v)", err, info.Torn)
	}

	dir2 := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr = lockchaos(t, "run", "smoke", "--backend", "process", "--min-free-disk", "1000PiB", "--out", dir2, "-q")
	wantExit(t, code, 4, stdout, stderr)
	if !strings.Contains(stderr, "--min-free-disk") {
		t.Errorf("message does not name --min-free-disk: %s", stderr)
	}
	if _, err := os.Stat(history.FileIn(dir2)); err == nil {
		t.Error("a run refused for want of disk wrote a history")
	}
}

// matrix --scenarios (and run, through the same scenarios.Load) takes a
// sweep scenario's name.
func TestMatrixScenariosSweepName(t *testing.T) {
	list, err := loadScenarios([]string{"sweep-pause-in-release", " gc-pause"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "sweep-pause-in-release" || list[1].Name != "gc-pause" {
		t.Fatalf("loadScenarios gave %d scenarios", len(list))
	}
}
