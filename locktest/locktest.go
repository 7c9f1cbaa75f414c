// Package locktest is lockchaos's conformance suite for a lock written
// outside lockchaos, run from the lock author's own `go test`, in the spirit
// of testing/fstest:
//
//	func TestMyLock(t *testing.T) {
//		locktest.Run(t, "my-lock", mylock.New, locktest.Info(lockimpl.Info{Renews: true}))
//	}
//
// Run starts Redis (the process backend when redis-server is installed, the
// embedded in-process one otherwise) and runs, one subtest each:
//
//   - "capabilities": the lock's declarations (lockimpl.Info) against what
//     it does on a real server. A lock that re-enters a key it holds must
//     declare Reentrant, one that reports renewals through Env.Note must
//     declare Renews (and one that declares either must do it): a wrong
//     declaration makes the suite judge the lock as another kind and skip
//     the scenarios that would test it, so it fails here, saying what to
//     declare.
//   - every catalog scenario and every scenario of the pause-point sweep
//     (scenarios.Sweep) that applies to the lock's kind (Applies), failed
//     with the checker's violation sentences when a check's verdict is worse
//     than a correct lock of that kind must get.
//
// Every scenario left out is logged with the reason, and a summary line
// says what ran, passed, failed and was skipped. `go test -run
// 'TestMyLock/gc-pause'` selects scenarios; -short (or the Quick option)
// runs the kind's quick subset (ShortFor) with shorter durations: the
// subset is chosen so that every broken control of the kind fails it and
// every correct lock of the kind passes it (TestShortIsMutationAdequate).
//
// What a correct lock of a kind must get: each capability set has a
// reference, the built-in correct lock of that kind (ReferenceFor), and a
// scenario's expectation for the reference is the bar. A check the
// reference must pass ("valid") the lock must pass too. A check the
// reference is expected to fail ("invalid": the scenario demonstrates a
// limit of the design, such as a pause past the TTL without fencing) is not
// held against the lock either way: doing better than the reference is not a
// failure, and doing as badly is what the kind allows.
package locktest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/workloads"
)

// T is what Run needs of a test: *testing.T.
type T interface {
	testing.TB
	Run(name string, f func(t *testing.T)) bool
}

// An Option tunes Run.
type Option func(*config)

type config struct {
	info      lockimpl.Info
	backend   string
	scenarios []string
	reference string
	keep      string
	quick     bool
}

// Info declares the lock's capabilities (Reentrant, Fenced, Renews,
// NeedsReplicas, MinNodes) and description when Run registers it; Name and
// Kind are set by Run. Ignored when the lock is already registered: its
// registered Info counts.
func Info(info lockimpl.Info) Option { return func(c *config) { c.info = info } }

// Backend chooses the Redis backend (default "auto": process when
// redis-server is on PATH, else embedded).
func Backend(name string) Option { return func(c *config) { c.backend = name } }

// Scenarios restricts the run to these catalog scenarios (when they apply).
func Scenarios(names ...string) Option { return func(c *config) { c.scenarios = names } }

// Reference overrides the built-in lock whose expectations are the bar
// (default: ReferenceFor the lock's Info).
func Reference(lock string) Option { return func(c *config) { c.reference = lock } }

// KeepRuns writes each scenario's run directory (history, report) under dir
// instead of a temporary one, to inspect a failure.
func KeepRuns(dir string) Option { return func(c *config) { c.keep = dir } }

// Quick runs the fast subset with short durations, as -short does.
func Quick() Option { return func(c *config) { c.quick = true } }

// ReferenceFor names the built-in correct lock of info's capabilities.
func ReferenceFor(info lockimpl.Info) string { return runner.CapabilityReference(info) }

// ShortScenarios are the scenarios -short runs, by kind (the reference's
// name, ReferenceFor): the fewest, about a second each, with which every
// broken control of the kind fails and every correct lock of the kind
// passes (TestShortIsMutationAdequate runs them all). Per kind, the
// controls each catches:
//
//   - every kind: smoke (no faults), expire-then-unlock (del-no-owner,
//     renew-no-owner-check, watchdog-fixed-timer), stall-unlock (get-del),
//     crash-between (setnx-expire): a release without its owner check, a
//     check-then-act release and a non-atomic acquire are mistakes any
//     kind's code can make;
//   - fenced: gc-pause (the resource must stay valid behind the fence),
//     late-fence (fenced-incr-after-set: the fence issued after the key
//     was taken, by the server's order of the takes);
//   - reentrant, watchdog: reentrant-expiry (local-reentrant);
//   - simple: slow-acquire-reply (deadline-from-reply), server-clock-ahead
//     (server-clock-deadline), acquire-times-out (unknown-acquire-held);
//   - reentrant: own-commands (reentrant-no-owner-check,
//     reentrant-early-free: the lock's own commands, no fault);
//   - watchdog: renewal-starved (a watchdog that does not stop at its
//     local deadline), clock-jump-under-holder (renew-false-success),
//     renewal-times-out (renew-timeout-ack), cancelled-acquire
//     (renew-after-cancel: a renewal left running by an acquire whose
//     caller gave up), thrown-in-critical-section (release-on-success: a
//     renewal left running by a release skipped on the exception path);
//   - redlock: slow-acquire (redlock-no-validity), minority-quorum
//     (redlock-minority-quorum);
//   - simple-wait: failover, the one scenario with replicas (9s).
//
// A scenario that does not apply to the lock is left out as in the full
// run.
var ShortScenarios = map[string][]string{
	"simple":      append(slices.Clone(shortBase), "slow-acquire-reply", "server-clock-ahead", "acquire-times-out"),
	"fenced":      append(slices.Clone(shortBase), "gc-pause", "late-fence"),
	"reentrant":   append(slices.Clone(shortBase), "reentrant-expiry", "own-commands"),
	"watchdog":    append(slices.Clone(shortBase), "reentrant-expiry", "renewal-starved", "clock-jump-under-holder", "renewal-times-out", "cancelled-acquire", "thrown-in-critical-section"),
	"redlock":     append(slices.Clone(shortBase), "slow-acquire", "minority-quorum"),
	"simple-wait": {"failover"},
}

var shortBase = []string{"smoke", "expire-then-unlock", "stall-unlock", "crash-between"}

// ShortFor is the -short subset for a lock whose reference is ref.
func ShortFor(ref string) []string {
	if s, ok := ShortScenarios[ref]; ok {
		return s
	}
	return shortBase
}

// registered remembers the locks Run registered, so a second Run (-count=2)
// reuses them instead of registering twice.
var (
	regMu      sync.Mutex
	registered = map[string]bool{}
)

// Run runs the conformance suite on the lock name. With a nil factory the
// lock must already be registered (by its package's init); otherwise Run
// registers factory under name with the Info option's capabilities.
func Run(t T, name string, factory lockimpl.Factory, opts ...Option) {
	t.Helper()
	c := config{backend: cluster.Auto}
	for _, o := range opts {
		o(&c)
	}
	c.quick = c.quick || testing.Short()
	info, err := register(name, factory, c.info)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	ref := c.reference
	if ref == "" {
		ref = ReferenceFor(info)
	}
	refInfo, _, err := lockimpl.Lookup(ref)
	if err != nil {
		t.Fatalf("locktest: reference lock: %v", err)
	}
	steps, err := plan(info, refInfo, c)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	if !slices.ContainsFunc(steps, func(st step) bool { return st.skip == "" }) {
		t.Fatalf("locktest: no scenario applies to %s (%s, reference %s)", name, info.Capabilities(), ref)
	}
	mode := "full"
	if c.quick {
		mode = "-short subset"
	}
	t.Logf("locktest %s (%s; bar: the expectations for %s; %s)", name, info.Capabilities(), ref, mode)
	// A subtest that go test's -run leaves out "passes" without running:
	// each records that it ran, so the summary does not count it.
	var tl tally
	tl.capOK = t.Run("capabilities", func(t *testing.T) { tl.capRan = true; reportTo(t, probe(c, name, info, t.TempDir)) })
	for _, st := range steps {
		tl.step(t, st, func(t *testing.T) string { return reportTo(t, judge(c, name, info, ref, st.s, t.TempDir)) })
	}
	t.Log(tl.summary(name))
}

// tally counts what a Run did, for its summary line.
type tally struct {
	capRan, capOK  bool
	passed, failed []string
	skipped        map[string][]string // reason → scenarios
	reasons        []string            // skipped's keys in order
	left           int
}

func (tl *tally) skip(n, why string) {
	if tl.skipped == nil {
		tl.skipped = map[string][]string{}
	}
	if tl.skipped[why] == nil {
		tl.reasons = append(tl.reasons, why)
	}
	tl.skipped[why] = append(tl.skipped[why], n)
	tl.left++
}

// step runs st as a subtest (judge returns why it did not apply, or "")
// or records why it was left out.
func (tl *tally) step(t T, st step, judge func(*testing.T) string) {
	if st.skip != "" {
		if !st.chosen {
			// Left out for the lock's kind (not a choice of this
			// run's): said one by one.
			t.Logf("skipped %s: %s", st.s.Name, st.skip)
		}
		tl.skip(st.s.Name, st.skip)
		return
	}
	why, did := "", false
	ok := t.Run(st.s.Name, func(t *testing.T) {
		did = true
		why = judge(t)
	})
	switch {
	case !did:
		tl.skip(st.s.Name, "not selected by go test -run")
	case why != "":
		tl.skip(st.s.Name, why)
	case ok:
		tl.passed = append(tl.passed, st.s.Name)
	default:
		tl.failed = append(tl.failed, st.s.Name)
	}
}

func (tl *tally) summary(name string) string {
	capabilities := "passed"
	switch {
	case !tl.capRan:
		capabilities = "not run (go test -run)"
	case !tl.capOK:
		capabilities = "FAILED"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "locktest %s summary: capabilities check %s; %d scenarios ran: %d passed, %d failed; %d skipped",
		name, capabilities, len(tl.passed)+len(tl.failed), len(tl.passed), len(tl.failed), tl.left)
	fmt.Fprintf(&b, "\n  passed: %s\n  failed: %s", list(tl.passed), list(tl.failed))
	for _, why := range tl.reasons {
		fmt.Fprintf(&b, "\n  skipped, %s: %s", why, list(tl.skipped[why]))
	}
	return b.String()
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// A step is one scenario of the plan: run, or left out (skip says why).
type step struct {
	s    *scenarios.Scenario
	skip string
	// chosen: left out by this run's choice (Scenarios, -short), not
	// because it does not apply to the lock.
	chosen bool
}

// plan is every catalog and sweep scenario, each to run or left out with
// the reason.
func plan(info, ref lockimpl.Info, c config) ([]step, error) {
	all, err := scenarios.All()
	if err != nil {
		return nil, err
	}
	sweep, err := scenarios.Sweep()
	if err != nil {
		return nil, err
	}
	short := ShortFor(ref.Name)
	var steps []step
	for _, s := range append(all, sweep...) {
		st := step{s: s}
		ok, why := Applies(info, ref, s)
		switch {
		case !ok:
			st.skip = why
		case len(c.scenarios) > 0 && !slices.Contains(c.scenarios, s.Name):
			st.skip, st.chosen = "not selected by locktest.Scenarios", true
		case c.quick && !slices.Contains(short, s.Name):
			st.skip, st.chosen = "not in the -short subset of "+ref.Name+"'s kind", true
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// register returns the Info of name, registering factory under it first
// when given.
func register(name string, factory lockimpl.Factory, info lockimpl.Info) (lockimpl.Info, error) {
	regMu.Lock()
	defer regMu.Unlock()
	if factory != nil && !registered[name] {
		if _, _, err := lockimpl.Lookup(name); err == nil {
			return lockimpl.Info{}, fmt.Errorf("lock %q is already registered (by its package's init?): pass a nil factory to test it", name)
		}
		info.Name, info.Kind = name, lockimpl.User
		if info.Description == "" {
			info.Description = "registered by locktest.Run"
		}
		var perr error
		func() {
			defer func() {
				if r := recover(); r != nil {
					perr = fmt.Errorf("%v", r)
				}
			}()
			lockimpl.Register(info, factory)
		}()
		if perr != nil {
			return lockimpl.Info{}, perr
		}
		registered[name] = true
	}
	got, _, err := lockimpl.Lookup(name)
	return got, err
}

// Applies says whether scenario s tests a lock with info, whose reference
// built-in lock is ref: the scenario must apply to the reference (its
// topology and its locks: list) and to the lock's own needs (nodes,
// replicas), and a scenario that re-enters the lock
// needs a reentrant one.
func Applies(info, ref lockimpl.Info, s *scenarios.Scenario) (bool, string) {
	if ok, why := runner.Applicable(ref, s); !ok {
		return false, fmt.Sprintf("not for the reference %s: %s", ref.Name, why)
	}
	own := *s
	own.Locks = nil // the scenario's locks: list names built-ins, not this lock
	if ok, why := runner.Applicable(info, &own); !ok {
		return false, why
	}
	if s.Workload.Reentry > 0 && !info.Reentrant {
		return false, "re-enters the lock, which does not declare Reentrant"
	}
	return true, ""
}

// Bar is the expectation a lock is held to in s: the reference's, with
// every "invalid" relaxed to "any" (see the package documentation).
func Bar(s *scenarios.Scenario, ref string) map[string]string {
	return runner.RelaxInvalid(s.Expectation(ref))
}

// A verdict is one subtest's result, handed to the test by reportTo.
type verdict struct {
	logs []string
	skip string // not run, and why
	fail string // the failure message; "" passed
}

// reportTo hands v to t and returns why it was skipped ("" when it ran).
func reportTo(t *testing.T, v verdict) string {
	t.Helper()
	for _, l := range v.logs {
		t.Log(l)
	}
	if v.fail != "" {
		t.Error(v.fail)
	}
	if v.skip != "" {
		t.Skip(v.skip)
	}
	return v.skip
}

// judge runs scenario s with the lock name and compares its verdicts with
// the bar; tmp makes a run directory (removed by the caller's test).
func judge(c config, name string, info lockimpl.Info, ref string, s *scenarios.Scenario, tmp func() string) verdict {
	var v verdict
	if s.Topology != cluster.Single && s.Topology != cluster.Independent {
		if _, err := exec.LookPath("redis-server"); err != nil && (c.backend == cluster.Auto || c.backend == "") {
			v.skip = fmt.Sprintf("scenario %s needs topology %s: redis-server is not installed and the embedded backend runs only single and independent", s.Name, s.Topology)
			return v
		}
	}
	sc := *s
	want := map[string]scenarios.Want{}
	for check, b := range Bar(s, ref) {
		w, err := scenarios.ParseWant(b)
		if err != nil {
			v.fail = fmt.Sprintf("%s: the bar for %s: %v", s.Name, check, err)
			return v
		}
		want[check] = w
	}
	sc.Expect = map[string]map[string]scenarios.Want{name: want}
	if c.quick {
		sc.Duration = shortDuration(s)
	}
	for attempt := 1; ; attempt++ {
		out := tmp()
		if c.keep != "" {
			out = filepath.Join(c.keep, fmt.Sprintf("%s-%s-%d", s.Name, name, time.Now().UnixNano()))
		}
		res, err := runner.Run(context.Background(), runner.Options{Scenario: &sc, Lock: name, Setup: runner.Setup{Backend: c.backend}, Out: out, Expect: true})
		if res == nil || res.Results == nil {
			v.fail = fmt.Sprintf("%s with %s: the run did not happen: %v", s.Name, name, err)
			return v
		}
		r := res.Results
		declared := slices.ContainsFunc(r.Notes, isDeclarationNote)
		verdicts := map[string]string{}
		for check, ch := range r.Checks {
			verdicts[check] = string(ch.Verdict)
		}
		_, mismatches := scenarios.Matches(Bar(s, ref), verdicts)
		switch {
		case declared && attempt < 2 && !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, workloads.UndeclaredRenewals) }):
			// The silent-renewal rule reads the longest hold's length: a
			// machine that stalls the process for a few hundred ms can make
			// one. A lock that never reports its renewals does it again.
			v.logs = append(v.logs, fmt.Sprintf("%s with %s: %s; running it again (a stalled machine can make one long hold)", s.Name, name, strings.Join(r.Notes, "; ")))
			continue
		case declared:
			// Renewals the checker cannot see make every deadline it judges
			// the first one: the lock must report them (Env.Note,
			// Renewal). Renewals reported by a lock that does not declare
			// Renews mean it is judged as the wrong kind.
		case r.Outcome == "as-expected":
			v.logs = append(v.logs, fmt.Sprintf("%s with %s (%s): verdict %s, %d cycles in %v; meets the bar (%s's expectation, invalid relaxed to any: %v)",
				s.Name, name, info.Capabilities(), r.Verdict, r.Stats.Cycles, sc.Duration, ref, sc.Expect[name]))
			return v
		case r.Outcome == "unknown" && attempt < 2:
			// The checker could not decide (e.g. outcomes left unknown by
			// a loaded machine): once more before calling it inconclusive.
			v.logs = append(v.logs, fmt.Sprintf("%s with %s: inconclusive (%s); running it again", s.Name, name, strings.Join(r.Notes, "; ")))
			continue
		case attempt < 2 && len(mismatches) > 0 && !slices.ContainsFunc(mismatches, func(m string) bool { return !strings.HasPrefix(m, checker.CheckLiveness+":") }):
			// Only liveness missed the bar: how long a key stayed
			// unavailable is a timing, and a loaded machine (a shared CI
			// runner) can stretch it past the TTL's allowance. Once more;
			// a lock that leaves keys held (setnx-expire) does it again.
			v.logs = append(v.logs, fmt.Sprintf("%s with %s: only liveness missed the bar (%s); running it again", s.Name, name, strings.Join(mismatches, "; ")))
			continue
		}
		v.fail = failure(s, name, ref, r.Outcome, r.Verdict, res.Dir, r.Notes, violations(r.Violations))
		if attempt > 1 {
			v.fail += fmt.Sprintf("\n  (attempt %d; the first: %s)", attempt, strings.Join(v.logs, "; "))
		}
		return v
	}
}

// isDeclarationNote: a workload note that says the lock's renewals
// contradict its declaration.
func isDeclarationNote(n string) bool {
	return strings.Contains(n, workloads.SilentRenewals) || strings.Contains(n, workloads.UndeclaredRenewals)
}

// failure is the message of a scenario the lock did not pass.
func failure(s *scenarios.Scenario, name, ref, outcome, verdict, dir string, notes, viol []string) string {
	var b strings.Builder
	what := "verdicts worse than a correct lock of its kind must get"
	switch {
	case slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, workloads.SilentRenewals) }):
		what = "it " + workloads.SilentRenewals
	case slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, workloads.UndeclaredRenewals) }):
		what = "it " + workloads.UndeclaredRenewals + ": declare Renews in its lockimpl.Info (locktest.Info)"
	case outcome == "unknown":
		what = "inconclusive twice"
	}
	fmt.Fprintf(&b, "%s with %s: %s (verdict %s; bar: the catalog's expectation for %s)\n", s.Name, name, what, verdict, ref)
	fmt.Fprintf(&b, "  scenario: %s\n", strings.TrimSpace(firstSentence(s.Description)))
	for _, n := range notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	for _, v := range viol {
		fmt.Fprintf(&b, "  violation: %s\n", v)
	}
	fmt.Fprintf(&b, "  run directory: %s (use locktest.KeepRuns to keep it)", dir)
	return b.String()
}

// violations are the checker's sentences, one per distinct check and cause
// (the first of each), at most 10.
func violations(vs []checker.Violation) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vs {
		k := v.Check + "\x00" + v.Cause
		if seen[k] || len(out) >= 10 {
			continue
		}
		seen[k] = true
		s := fmt.Sprintf("%s [%s] at %.0fms, key %s, clients %v: %s", v.Check, v.Cause, v.AtMS, v.Key, v.Clients, v.Explanation)
		if v.Detail != "" {
			s += " (" + v.Detail + ")"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// shortDuration is a scenario's workload phase under -short: 1s, or long
// enough for its first faults to fire and end, never longer than the full
// run.
func shortDuration(s *scenarios.Scenario) time.Duration {
	d := time.Second
	for _, f := range s.Faults {
		at := f.At
		if len(f.Random) == 2 {
			at = f.Random[1]
		}
		if f.When != "" {
			// A firing held back for a client's point may wait for every
			// client's cycle once (restart-empty: client 0's next
			// acquire comes after the other client's hold).
			cycle := s.Workload.Hold.Max + s.Workload.Think.Max
			at += time.Duration(max(s.Workload.Clients, 1)) * cycle
		}
		if n := f.Count; f.Every > 0 {
			if n == 0 {
				// It repeats until the end: keep three firings, so that
				// one that misses its moment on a loaded machine (the
				// broken DEL of expire-then-unlock landing between two
				// holders) is not the run's only chance.
				n = 3
			}
			at += time.Duration(n-1) * f.Every // the last of its firings
		}
		d = max(d, at+f.Duration+300*time.Millisecond)
	}
	if d >= s.Duration {
		return s.Duration
	}
	// The short run must still be a valid scenario (every firing inside it).
	short := *s
	short.Duration = d
	if short.Validate() != nil {
		return s.Duration
	}
	return d
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
