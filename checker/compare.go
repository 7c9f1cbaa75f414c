package checker

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
)

// CompareEnv, set to 1, makes CheckFile check every history twice — streamed
// in small windows and whole — and fail on any difference (CI and
// TestStreamMatchesWhole use it to hold streaming to the whole check on real
// runs).
const CompareEnv = "LOCKCHAOS_CHECK_COMPARE"

// compareBatch is the window of the comparison's streamed pass: small, so
// that a run of a few seconds is judged in many windows.
const compareBatch = 256

// Differences lists how two results of one history differ: verdicts,
// per-check verdicts, counts and statistics, notes, loss detection, and the
// violations and incidents kept with evidence (as sets: the two passes find
// them in a different order; compared only where no check kept fewer than
// it counted, since then each pass keeps a different first hundred).
func Differences(a, b *Result) []string {
	var out []string
	diff := func(what string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			out = append(out, fmt.Sprintf("%s: %s ≠ %s", what, js(x), js(y)))
		}
	}
	diff("verdict", a.Verdict, b.Verdict)
	diff("events", a.Events, b.Events)
	for _, n := range AllChecks {
		diff("check "+n, a.Checks[n], b.Checks[n])
	}
	diff("notes", a.Notes, b.Notes)
	diff("loss detection", normLoss(a.LossDetection), normLoss(b.LossDetection))
	if len(a.Violations) == countViolations(a.Checks) && len(b.Violations) == countViolations(b.Checks) {
		diff("violations", sortedViolations(a.Violations), sortedViolations(b.Violations))
		diff("incidents", incidentSet(a), incidentSet(b))
	}
	return out
}

func js(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// normLoss drops the worst hold's description: of holds whose latencies tie
// each pass names the first it met.
func normLoss(l *LossDetection) *LossDetection {
	if l == nil {
		return nil
	}
	c := *l
	c.Worst = ""
	return &c
}

func violationKey(v Violation) string {
	return fmt.Sprintf("%020d %s %s %v %s", v.Window[0], v.Check, v.Key, v.Clients, v.Detail)
}

func sortedViolations(vs []Violation) []Violation {
	out := slices.Clone(vs)
	slices.SortStableFunc(out, func(x, y Violation) int { return cmp.Compare(violationKey(x), violationKey(y)) })
	return out
}

// incidentSet describes each incident by its violations' keys, not their
// indices.
func incidentSet(r *Result) []string {
	var out []string
	for _, in := range r.Incidents {
		var vs []string
		for _, i := range in.Violations {
			vs = append(vs, violationKey(r.Violations[i]))
		}
		slices.Sort(vs)
		out = append(out, fmt.Sprintf("%s|%d|%s|%v|%v|%v|%s", in.Cause, in.FaultID, in.Sentence, in.Span, in.Clients, in.Keys, strings.Join(vs, ";")))
	}
	slices.Sort(out)
	return out
}

// compareOn reports whether CompareEnv asks for the double check.
func compareOn() bool { return os.Getenv(CompareEnv) == "1" }
