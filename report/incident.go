package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// maxTextIncidents is how many incidents WriteText and summary.md spell out.
const maxTextIncidents = 10

// countNames say what one violation of a check is, singular and plural.
var countNames = map[string][2]string{
	checker.CheckMutex:      {"mutex pair", "mutex pairs"},
	checker.CheckResource:   {"lost write", "lost writes"},
	checker.CheckFencing:    {"fencing violation", "fencing violations"},
	checker.CheckUnlock:     {"foreign unlock", "foreign unlocks"},
	checker.CheckReentrancy: {"reentrancy violation", "reentrancy violations"},
	checker.CheckLiveness:   {"unavailable stretch", "unavailable stretches"},
}

// incidentCounts says what an incident contains: "30 mutex pairs, 2 lost
// writes".
func incidentCounts(in checker.Incident) string {
	var parts []string
	seen := map[string]bool{}
	add := func(check string) {
		n := in.Counts[check]
		if n == 0 || seen[check] {
			return
		}
		seen[check] = true
		name, ok := countNames[check]
		if !ok {
			name = [2]string{check + " violation", check + " violations"}
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, name[min(n-1, 1)]))
	}
	for _, c := range checker.AllChecks {
		add(c)
	}
	rest := make([]string, 0, len(in.Counts))
	for c := range in.Counts {
		rest = append(rest, c)
	}
	sort.Strings(rest)
	for _, c := range rest {
		add(c)
	}
	return strings.Join(parts, ", ")
}

// incidentSpan formats an incident's span in ms.
func incidentSpan(in checker.Incident) string {
	return fmt.Sprintf("%s – %s", formatMS(history.MS(in.Span[0])), formatMS(history.MS(in.Span[1])))
}

// incidentFacts is the line under an incident's sentence: span, clients,
// keys, cause and fault, and what it contains.
func incidentFacts(in checker.Incident) string {
	cause := orDash(in.Cause)
	if in.FaultID > 0 {
		cause += fmt.Sprintf(" (fault %d)", in.FaultID)
	}
	return fmt.Sprintf("span %s · clients %s · key%s %s · cause %s · contains %s",
		incidentSpan(in), joinInts(in.Clients), plural(len(in.Keys)), orDash(strings.Join(in.Keys, ",")), cause, incidentCounts(in))
}

// incidentsHeading is "1 incident" / "3 incidents".
func incidentsHeading(n int) string {
	return fmt.Sprintf("%d incident%s", n, plural(n))
}

// incidentOf maps a violation's index to its incident's id.
func incidentOf(r *metrics.Results) map[int]int {
	out := map[int]int{}
	for _, in := range r.Incidents {
		for _, i := range in.Violations {
			out[i] = in.ID
		}
	}
	return out
}

// incidentTimelineView is the view one incident's holder timeline draws:
// its span, clients and first key (a timeline shows one key's holders).
func incidentTimelineView(in checker.Incident) checker.Violation {
	v := checker.Violation{Check: "incident", Clients: in.Clients, Window: in.Span, Cause: in.Cause}
	if len(in.Keys) > 0 {
		v.Key = in.Keys[0]
	}
	return v
}
