package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/scenarios"
)

// finding shrinks, confirms and saves a new finding of check v in s.
func (e *Explorer) finding(ctx context.Context, s Schedule, v Verdict, checks []string, failSeeds []uint64, at time.Duration) {
	e.mu.Lock()
	n := len(e.rep.Findings) + e.rep.Unconfirmed + e.rep.Merged + 1
	f := &Found{N: n, Check: v.Check, Checks: checks, Cause: v.Cause, Sentence: v.Sentence, Original: s, Minimal: s, FoundAfter: at,
		Lock: v.Lock, Ref: v.Ref, Seed: failSeeds[0]}
	e.rep.Findings = append(e.rep.Findings, f)
	e.mu.Unlock()
	e.progress(func(p *Progress) { p.Findings++ })
	f.Dir = filepath.Join(e.cfg.Out, "findings", fmt.Sprint(n))
	var trail []Schedule
	if !e.cfg.NoShrink {
		// Two seeds, tried one after the other (still): those it failed
		// on, else one more (two whatever the parallelism, so that a step
		// means the same).
		two := min(2, e.cfg.Parallel)
		seeds := failSeeds[:min(len(failSeeds), two)]
		for extra := uint64(e.cfg.Seeds) + 1; len(seeds) < two; extra++ {
			seeds = append(seeds, extra)
		}
		f.Minimal, trail = ShrinkTrail(ctx, s, e.still(n, v.Check, seeds), func(st Step) {
			f.ShrinkSteps++
			if st.Kept {
				f.ShrinkKept++
			}
			e.progress(func(p *Progress) { p.Shrinking, p.Step = n, fmt.Sprintf("step %d %s", st.N, st.What) })
		})
		e.progress(func(p *Progress) { p.Shrinking, p.Step = 0, "" })
	}
	ok, done := e.confirm(ctx, f, f.Minimal, "runs")
	if !ok && done && f.Minimal.Size() != s.Size() {
		// The shrunk schedule did not hold on the confirmation seeds: the
		// smallest one kept on the way that does, else the original.
		f.refute(f.Minimal)
		ok, done = e.confirmTrail(ctx, f, s, trail)
	}
	if !ok && done {
		// Refuted by a confirmation that ran to its end: not a finding.
		e.mu.Lock()
		e.rep.Findings = slices.DeleteFunc(e.rep.Findings, func(x *Found) bool { return x == f })
		e.rep.Unconfirmed++
		delete(e.seen, v.Cause)
		e.mu.Unlock()
		e.progress(func(p *Progress) { p.Findings-- })
		_ = os.RemoveAll(f.Dir)
		return
	}
	if !ok {
		f.asFound(s, v, failSeeds[0])
	}
	// The confirmation may name the cause otherwise: a schedule showing
	// that cause is a duplicate too (and, confirmed, not re-run: Known).
	e.mu.Lock()
	e.seen[f.Cause] = true
	e.known[f.Cause] = e.known[f.Cause] || ok
	key := f.Check + "|" + f.Cause + "|" + f.Minimal.Shape()
	same := e.shapes[key]
	if same == nil {
		e.shapes[key] = f
	} else {
		e.rep.Findings = slices.DeleteFunc(e.rep.Findings, func(x *Found) bool { return x == f })
		e.rep.Merged++
	}
	e.mu.Unlock()
	if same != nil {
		e.merge(same, f)
		return
	}
	if ok && f.Lock.Fails < f.Lock.N {
		e.amplify(ctx, f)
	}
	if err := e.save(f); err != nil {
		f.Sentence += " (not saved: " + err.Error() + ")"
	}
}

// asFound is f when the budget ended before a confirmation: the schedule s
// as found, with the rates and the sentence it was found with (v) on its
// first failing seed; the shrinking so far is kept as Partial.
func (f *Found) asFound(s Schedule, v Verdict, seed uint64) {
	if f.Minimal.Size() != s.Size() {
		p := f.Minimal
		f.Partial = &p
	}
	f.Minimal, f.Lock, f.Ref, f.Cause, f.Sentence = s, v.Lock, v.Ref, v.Cause, v.Sentence
	f.Seed = seed
}

// merge counts candidate f, shrunk and confirmed to the same check, cause
// and schedule shape as the finding into, as found again: into.Merged, and
// its finding.json and findings.md rewritten when it is saved already
// (else its own save writes the count); f's directory goes.
func (e *Explorer) merge(into, f *Found) {
	e.progress(func(p *Progress) { p.Findings-- })
	_ = os.RemoveAll(f.Dir)
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	into.Merged++
	if into.Replay == "" {
		return
	}
	_ = writeJSON(filepath.Join(into.Dir, "finding.json"), into)
	_ = e.writeFindingsMD()
}

// confirmTrail looks for the smallest schedule of the shrinking trail
// (trail[len-1], the minimal, was refuted already) that the confirmation
// holds for, by bisection over the trail (a bigger schedule is likelier to
// hold), with the original s as the fallback: ok and done as confirm's,
// f.Minimal and its rates set to the schedule that held.
func (e *Explorer) confirmTrail(ctx context.Context, f *Found, s Schedule, trail []Schedule) (ok, done bool) {
	// Each confirmation runs into its own directory (a run never
	// overwrites one); the one that held becomes runs/, which
	// report.html links.
	runs := filepath.Join(f.Dir, "runs")
	_ = os.RemoveAll(runs) // the refuted minimal's
	// trail[hi] is refuted; trail[lo] held (lo == -1: the original, which
	// the rerun showed). A later trail entry is smaller.
	lo, hi := -1, len(trail)-1
	var held Found
	heldDir := ""
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		sub := fmt.Sprintf("runs-trail-%d", mid)
		dir := filepath.Join(f.Dir, sub)
		ok, done := e.confirm(ctx, f, trail[mid], sub)
		if !done {
			_ = os.RemoveAll(dir)
			if heldDir != "" {
				_ = os.RemoveAll(heldDir)
			}
			return false, false
		}
		if ok {
			if heldDir != "" {
				_ = os.RemoveAll(heldDir)
			}
			lo, held, heldDir = mid, *f, dir
			held.Minimal = trail[mid]
		} else {
			_ = os.RemoveAll(dir)
			f.refute(trail[mid])
			hi = mid
		}
	}
	if lo >= 0 {
		refuted := f.Refuted
		*f = held
		f.Refuted = refuted
		_ = os.Rename(heldDir, runs)
		return true, true
	}
	f.Minimal = s
	return e.confirm(ctx, f, s, "runs")
}

// refute records that confirmation refuted schedule c, with the rates it
// got.
func (f *Found) refute(c Schedule) {
	f.Refuted = append(f.Refuted, Refutation{Schedule: c.Describe(), Lock: f.Lock, Ref: f.Ref, Reason: f.whyNot})
}

// confirm runs s on ConfirmSeeds seeds, lock and reference, into the
// finding's directory's sub, and applies the finding rule to its check:
// ok when it holds, done when the runs ended before the budget.
func (e *Explorer) confirm(ctx context.Context, f *Found, s Schedule, sub string) (ok, done bool) {
	var lockRuns, refRuns []RunResult
	var v Verdict
	// Batches of ConfirmSeeds seeds until the rates' 95% intervals are
	// apart or MaxConfirm seeds ran: 2/5 against 0/5 is chance (the
	// intervals overlap; a correct lock explored as its own reference
	// showed it), 5/5 against 0/5 is not.
	for from := 1; ; from += e.cfg.ConfirmSeeds {
		var jobs []job
		to := from + e.cfg.ConfirmSeeds - 1
		for seed := uint64(from); seed <= uint64(to); seed++ {
			jobs = append(jobs,
				job{e.cfg.Lock, seed, filepath.Join(f.Dir, sub, fmt.Sprintf("%s-seed%d", e.cfg.Lock, seed)), false},
				job{e.cfg.Reference, seed, filepath.Join(f.Dir, sub, fmt.Sprintf("ref-%s-seed%d", e.cfg.Reference, seed)), true})
		}
		rs := e.runAll(ctx, s, jobs)
		if ctx.Err() != nil {
			return false, false
		}
		l, r := split(jobs, rs)
		lockRuns, refRuns = append(lockRuns, l...), append(refRuns, r...)
		_, vs := Classify(lockRuns, refRuns)
		i := slices.IndexFunc(vs, func(v Verdict) bool { return v.Check == f.Check })
		if i < 0 {
			return false, true
		}
		v = vs[i]
		f.Lock, f.Ref, f.whyNot = v.Lock, v.Ref, v.Reason
		if v.Class != Finding {
			return false, true
		}
		if Apart(v.Lock, v.Ref) {
			break
		}
		if to >= e.cfg.MaxConfirm {
			return false, true
		}
	}
	f.Confirmed = true
	if v.Sentence != "" {
		f.Sentence, f.Cause = v.Sentence, v.Cause
	}
	for _, r := range lockRuns {
		if r.Checks[f.Check] == "invalid" {
			f.Seed = r.Seed
			break
		}
	}
	f.refAny = nil
	for _, r := range refRuns {
		for c, verdict := range r.Checks {
			if c != f.Check && verdict != "valid" {
				f.refAny = append(f.refAny, c)
			}
		}
	}
	return true, true
}

// Scenario is the finding as a scenario: its minimal schedule on the seed
// the lock failed, expecting the check invalid for the lock and valid for
// the reference.
func (e *Explorer) Scenario(f *Found) (*scenarios.Scenario, error) {
	saved := f.Minimal
	repeated := ""
	if f.Repeat != nil {
		saved, repeated = *f.Repeat, " Repeated for the replay: "+f.Repeat.Describe()+"."
	}
	sc, err := saved.Scenario(fmt.Sprintf("explore-%s-%d", e.cfg.Lock, f.N))
	if err != nil {
		return nil, err
	}
	sc.Seed = f.Seed
	if o, ok := e.cfg.Oracle.(LockOptioner); ok {
		sc.Lock.Extra = saved.LockExtra(o.LockOptions()) // the replay runs the version and the API mode explored
	}
	sc.Description = fmt.Sprintf("Found by lockchaos explore (seed %d, %s vs %s): %s fails %s (%s). %s Minimal schedule: %s. "+
		"Lock fails %s seeds, reference %s %s.%s",
		e.cfg.Seed, e.cfg.Lock, e.cfg.Reference, e.cfg.Lock, f.Check, f.Cause, strings.TrimSpace(f.Sentence), f.Minimal.Describe(),
		f.Lock, e.cfg.Reference, f.Ref, repeated)
	sc.Expect = map[string]map[string]scenarios.Want{
		e.cfg.Lock: {f.Check: {Verdict: "invalid"}, "*": {Verdict: "any"}},
	}
	if e.cfg.Reference != e.cfg.Lock {
		ref := map[string]scenarios.Want{f.Check: {Verdict: "valid"}}
		for _, c := range f.refAny {
			ref[c] = scenarios.Want{Verdict: "any"}
		}
		sc.Expect[e.cfg.Reference] = ref
	}
	return sc, sc.Validate()
}

func (e *Explorer) save(f *Found) error {
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return err
	}
	sc, err := e.Scenario(f)
	if err != nil {
		return err
	}
	b, err := CompactYAML(sc)
	if err != nil {
		return err
	}
	p := filepath.Join(f.Dir, "scenario.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return err
	}
	lock := e.cfg.LockArg
	if lock == "" {
		lock = e.cfg.Lock
	}
	f.Replay = fmt.Sprintf("lockchaos run %s --lock %s --expect", shellWord(p), shellWord(lock))
	e.showRun(f)
	if err := writeJSON(filepath.Join(f.Dir, "finding.json"), f); err != nil {
		return err
	}
	return e.writeFindingsMD()
}

// shellWord is s as one word of a POSIX shell command line: as it is when
// it holds only characters no shell treats specially, else single-quoted
// (exec:<command> has spaces).
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:=,@%+-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Line is a finding's line in findings.md: the lock, the check, the
// cause, the minimal schedule in words and the replay command.
func (f *Found) Line(lock, ref string) string {
	conf := ""
	if !f.Confirmed {
		conf = " (not confirmed: the budget ended first)"
	}
	saved := ""
	if f.Repeat != nil {
		saved = " (saved with its faults repeated over a 3 s run, which fails on more seeds; the rates are the saved schedule's)"
	}
	refuted := ""
	if n := len(f.Refuted); n > 0 {
		refuted = fmt.Sprintf(" (%d smaller schedule(s) refuted on confirmation, smallest: %s, lock %s, reference %s)",
			n, f.Refuted[0].Schedule, f.Refuted[0].Lock, f.Refuted[0].Ref)
	}
	times := ""
	if f.Merged > 0 {
		times = fmt.Sprintf(" (found %d times: the other candidates shrank to the same check, cause and schedule shape)", 1+f.Merged)
	}
	return fmt.Sprintf("- **%s** fails **%s** (cause %s)%s%s: %s Minimal schedule: %s%s%s. Lock fails %s seeds, reference %s %s. Replay: `%s`",
		lock, f.Check, f.Cause, conf, times, strings.TrimSpace(f.Sentence), f.Minimal.Describe(), saved, refuted, f.Lock, ref, f.Ref, f.Replay)
}

func (e *Explorer) writeFindingsMD() error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Findings: %s against %s (explore seed %d)\n\n", e.cfg.Lock, e.cfg.Reference, e.cfg.Seed)
	for _, f := range e.rep.Findings {
		if f.Replay == "" {
			continue
		}
		b.WriteString(f.Line(e.cfg.Lock, e.cfg.Reference) + "\n")
	}
	if len(e.rep.Idle) > 0 {
		fmt.Fprintf(&b, "\n## Not findings: the reference could not acquire (%d schedules)\n\n", e.rep.Classes[RefIdle])
		b.WriteString("The lock failed these and the reference passed them only because it acquired nothing under a fault (its pass is vacuous):\n\n")
		for _, l := range e.rep.Idle {
			fmt.Fprintf(&b, "- %s (%s): %s.\n", l.Schedule, strings.Join(l.Checks, ", "), l.Reason)
		}
	}
	return os.WriteFile(filepath.Join(e.cfg.Out, "findings.md"), []byte(b.String()), 0o644)
}

// finish completes the report and writes explore.json and findings.md.
func (e *Explorer) finish() (*Report, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.rep
	r.Elapsed = time.Since(e.start).Round(time.Millisecond)
	r.Runs = e.runN
	if m := r.Elapsed.Minutes(); m > 0 {
		r.PerMinute = float64(r.Schedules) / m
		r.RunsPerMinute = float64(r.Runs) / m
	}
	r.Coverage = Coverage{Kinds: sortedSet(e.cov.kinds), KindsAll: e.gen.kinds(), Points: sortedSet(e.cov.points),
		Directions: sortedSet(e.cov.dirs), Whens: sortedSet(e.cov.whens), Tuples: len(e.cov.tuples)}
	if e.gen.hasAPIs() {
		r.Coverage.APIs = maps.Clone(e.cov.apis)
	}
	if e.gen.hasTasks() {
		r.Coverage.Tasks = maps.Clone(e.cov.tasks)
	}
	for _, f := range r.Findings {
		if f.Replay == "" && f.Minimal.Faults != nil {
			// Stopped before it was saved: saved as it stands.
			_ = e.saveLocked(f)
		}
	}
	if !e.cfg.KeepRuns {
		_ = os.RemoveAll(filepath.Join(e.cfg.Out, "runs"))
	}
	if err := e.writeFindingsMD(); err != nil {
		return r, err
	}
	if err := writeJSON(filepath.Join(e.cfg.Out, "explore.json"), r); err != nil {
		return r, err
	}
	return r, e.writeHTML(r, nil, false)
}

func (e *Explorer) saveLocked(f *Found) error {
	if f.Dir == "" {
		f.Dir = filepath.Join(e.cfg.Out, "findings", fmt.Sprint(f.N))
	}
	return e.save(f)
}

// CompactYAML marshals v leaving out every field at its zero value (a
// scenario's zero values are its defaults), so that a saved scenario reads
// like a hand-written one.
func CompactYAML(v any) ([]byte, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	prune(&root)
	return yaml.Marshal(&root)
}

func prune(n *yaml.Node) {
	for _, c := range n.Content {
		prune(c)
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	var keep []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !zero(n.Content[i+1]) {
			keep = append(keep, n.Content[i], n.Content[i+1])
		}
	}
	n.Content = keep
}

func zero(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Value {
		case "", "0", "0s", "false":
			return n.Tag != "!!str" || n.Value == "" || n.Value == "0s"
		}
	case yaml.MappingNode, yaml.SequenceNode:
		return len(n.Content) == 0
	}
	return false
}

// amplify makes a finding that failed on only some confirmation seeds
// replay more surely: its faults repeat over a 3 s run (a zero-fault
// finding just runs longer). The repeated schedule is kept for the saved
// scenario when it fails on more confirmation seeds and the reference
// still passes on all; the minimal schedule stays the finding's
// description.
func (e *Explorer) amplify(ctx context.Context, f *Found) {
	r := Repeated(f.Minimal)
	if _, err := r.Scenario("amplify"); err != nil {
		return
	}
	before := *f
	// Into runs-repeat: the runs kept in runs/ (which report.html links)
	// must be those of the schedule saved.
	runs, repeat := filepath.Join(f.Dir, "runs"), filepath.Join(f.Dir, "runs-repeat")
	defer os.RemoveAll(repeat)
	if ok, _ := e.confirm(ctx, f, r, "runs-repeat"); ok && f.Lock.Fails > before.Lock.Fails {
		f.Repeat = &r
		if os.RemoveAll(runs) == nil {
			_ = os.Rename(repeat, runs)
		}
		return
	}
	*f = before
}

// Repeated is s with every fault firing again and again over a 3 s run,
// each firing after the previous one's effect and two TTLs.
func Repeated(s Schedule) Schedule {
	r := s.Clone()
	r.Duration = 3 * time.Second
	for i := range r.Faults {
		f := &r.Faults[i]
		l := f.length(r.TTL)
		every := max(f.Spec.Every, (l + 2*r.TTL + 100*time.Millisecond).Round(10*time.Millisecond))
		limit := r.Duration
		n := int((limit-f.Spec.At-l)/every) + 1
		if n > 1 {
			f.Spec.Every, f.Spec.Count = every, n
		}
	}
	return r
}
