package metrics

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// A card that decides (issue 43.3): each lock's fault families are set
// against its reference's (the built-in correct lock of its capabilities,
// runner.CapabilityReference) on the same card, and each lock gets one
// verdict line. A family the lock fails and its reference holds is a
// finding; one both fail is a limit of the design they share; one the
// lock holds and its reference fails is where it does better.

// Versus values: how a lock's family compares with its reference's.
const (
	VersusWorse  = "worse"  // the lock fails it, its reference does not
	VersusLimit  = "limit"  // both fail it: a limit of the design
	VersusSame   = "same"   // both hold it
	VersusBetter = "better" // the lock holds it, its reference fails it
)

// Verdict classes of a lock's line.
const (
	VerdictWorse  = "worse"
	VerdictSafe   = "safe"
	VerdictBetter = "better"
	VerdictAlone  = "alone" // its reference is not on the card
)

// JudgeAgainstReferences sets each lock's Reference (refOf's answer),
// Versus and verdict line. A lock whose reference is not on the card is
// judged alone: its families have no versus, its line says so.
func (c *Card) JudgeAgainstReferences(refOf func(lock string) string) {
	col := map[string]*CardLock{}
	for i := range c.Locks {
		col[c.Locks[i].Name] = &c.Locks[i]
	}
	runs := c.runsByScenario()
	for i := range c.Locks {
		l := &c.Locks[i]
		l.Reference = refOf(l.Name)
		l.Versus = map[string]string{}
		if ref := col[l.Reference]; ref != nil {
			if vs, ok := runs.versus(l.Name, ref.Name); ok {
				l.Versus = vs
			} else {
				for _, f := range c.Families {
					if l.Safety[f].Runs > 0 && ref.Safety[f].Runs > 0 {
						l.Versus[f] = versus(l.Safety[f], ref.Safety[f])
					}
				}
			}
		}
	}
	fastest := c.fastestCorrect()
	for i := range c.Locks {
		l := &c.Locks[i]
		var worse, limits, better, failing, alone []string
		for _, f := range c.Families {
			if l.Safety[f].Runs > 0 && l.Safety[f].Invalid > 0 {
				failing = append(failing, f)
				if _, judged := l.Versus[f]; !judged || l.Versus[f] == VersusSame || l.Versus[f] == VersusBetter {
					// Its failures lie in scenarios its reference did
					// not run.
					alone = append(alone, f)
				}
			}
			switch l.Versus[f] {
			case VersusWorse:
				worse = append(worse, f)
			case VersusLimit:
				limits = append(limits, f)
			case VersusBetter:
				better = append(better, f)
			}
		}
		l.VerdictClass, l.Verdict = c.verdictLine(l, col[l.Reference] != nil, worse, limits, better, failing)
		if col[l.Reference] != nil && len(alone) > 0 {
			l.Verdict += fmt.Sprintf("; fails %s in scenarios %s did not run (judged alone there)", strings.Join(alone, ", "), l.Reference)
		}
		if cost := costLine(l, fastest); cost != "" {
			l.Verdict += "; " + cost
		}
	}
}

// cardRuns are a card's runs: each lock's seeds per scenario, and each
// scenario's family.
type cardRuns struct {
	ran    map[string]map[string][]SeedRun // lock → scenario → seeds
	family map[string]string
}

// runsByScenario indexes the card's cells that ran.
func (c *Card) runsByScenario() cardRuns {
	r := cardRuns{ran: map[string]map[string][]SeedRun{}, family: map[string]string{}}
	for _, s := range c.Scenarios {
		r.family[s.Name] = s.Family
	}
	for _, cell := range c.Cells {
		if len(cell.Seeds) == 0 {
			continue
		}
		if r.ran[cell.Lock] == nil {
			r.ran[cell.Lock] = map[string][]SeedRun{}
		}
		r.ran[cell.Lock][cell.Scenario] = cell.Seeds
	}
	return r
}

// versus compares lock with ref per family, scenario by scenario, over
// the scenarios both ran: a scenario that applies to one of them only (one
// meant for some locks, a topology the other cannot use) says nothing of
// how the other would have done, and a family's totals would call a lock
// better for what its reference never ran, or a limit where the lock fails
// a scenario its reference holds beside one both fail. A family is worse
// when the lock fails a scenario its reference holds, else a limit when
// both fail one, else better when only the reference fails one, else the
// same. ok is false when the card has no cells (the families' totals are
// compared then).
func (r cardRuns) versus(lock, ref string) (vs map[string]string, ok bool) {
	if len(r.ran) == 0 {
		return nil, false
	}
	rank := map[string]int{VersusSame: 0, VersusBetter: 1, VersusLimit: 2, VersusWorse: 3}
	vs = map[string]string{}
	for sc, seeds := range r.ran[lock] {
		refSeeds, both := r.ran[ref][sc]
		if !both {
			continue
		}
		f := r.family[sc]
		v := versus(rateOf(seeds), rateOf(refSeeds))
		if cur, seen := vs[f]; !seen || rank[v] > rank[cur] {
			vs[f] = v
		}
	}
	return vs, true
}

// rateOf counts seeds' verdicts.
func rateOf(seeds []SeedRun) (r FamilyRate) {
	for _, s := range seeds {
		r.Count(s.Verdict)
	}
	return r
}

// versus compares a lock's runs of a family with its reference's.
func versus(mine, ref FamilyRate) string {
	switch {
	case mine.Invalid > 0 && ref.Invalid == 0:
		return VersusWorse
	case mine.Invalid > 0:
		return VersusLimit
	case ref.Invalid > 0:
		return VersusBetter
	}
	return VersusSame
}

// verdictLine is a lock's class and line.
func (c *Card) verdictLine(l *CardLock, hasRef bool, worse, limits, better, failing []string) (string, string) {
	self := l.Reference == l.Name
	switch {
	case !hasRef:
		if len(failing) == 0 {
			return VerdictAlone, fmt.Sprintf("valid on every family; its reference %s is not on this card to compare with", l.Reference)
		}
		return VerdictAlone, fmt.Sprintf("invalid on %s; its reference %s is not on this card to tell a finding from a limit of the design", strings.Join(failing, ", "), l.Reference)
	case len(worse) > 0:
		return VerdictWorse, fmt.Sprintf("worse than its reference %s: fails %s, which %s holds%s", l.Reference, strings.Join(worse, ", "), l.Reference, c.causesOf(l.Name, worse))
	case len(better) > 0:
		line := fmt.Sprintf("better than its reference %s: holds %s, which %s fails", l.Reference, strings.Join(better, ", "), l.Reference)
		if len(limits) > 0 {
			line += fmt.Sprintf("; shares its limits on %s", strings.Join(limits, ", "))
		}
		return VerdictBetter, line
	case self && len(limits) > 0:
		return VerdictSafe, fmt.Sprintf("safe within its design (it is the reference of its capabilities); its limits: %s", strings.Join(limits, ", "))
	case len(limits) > 0:
		return VerdictSafe, fmt.Sprintf("safe within its design: fails only where its reference %s does too (%s)", l.Reference, strings.Join(limits, ", "))
	}
	return VerdictSafe, "safe: valid on every family"
}

// causesOf lists the causes of lock's findings in families fams.
func (c *Card) causesOf(lock string, fams []string) string {
	seen := map[string]bool{}
	var causes []string
	for _, f := range c.Findings {
		if f.Lock != lock || !slices.Contains(fams, f.Family) {
			continue
		}
		for _, cause := range f.Causes {
			if !seen[cause] {
				seen[cause] = true
				causes = append(causes, cause)
			}
		}
	}
	if len(causes) == 0 {
		return ""
	}
	sort.Strings(causes)
	return " (" + strings.Join(causes, ", ") + ")"
}

// fastestCorrect is the benched lock of highest throughput among those no
// family shows worse than their reference (nil: none benched).
func (c *Card) fastestCorrect() *CardLock {
	var best *CardLock
	for i := range c.Locks {
		l := &c.Locks[i]
		if l.Bench == nil || slices.Contains(slices.Collect(maps.Values(l.Versus)), VersusWorse) {
			continue
		}
		if best == nil || l.Bench.Lock.Throughput > best.Bench.Lock.Throughput {
			best = l
		}
	}
	return best
}

// costLine is a lock's throughput against the fastest correct lock's.
func costLine(l *CardLock, fastest *CardLock) string {
	if l.Bench == nil || fastest == nil || fastest.Bench.Lock.Throughput <= 0 {
		return ""
	}
	if fastest == l {
		return fmt.Sprintf("the fastest correct lock here (%.0f cycles/s)", l.Bench.Lock.Throughput)
	}
	return fmt.Sprintf("%.0f cycles/s, %.0f%% of the fastest correct lock (%s)", l.Bench.Lock.Throughput, 100*l.Bench.Lock.Throughput/fastest.Bench.Lock.Throughput, fastest.Name)
}
