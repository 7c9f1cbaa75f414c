package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// maxTextIncidents is how many incidents WriteText and summary.md spell out.
const maxTextIncidents = 10

// checkOrder is the checker's report order, for an incident's counts.
var checkOrder = []string{"mutex", "resource", "fencing", "unlock", "reentrancy", "liveness", "faults"}

// countNames say what one violation of a check is, singular and plural.
var countNames = map[string][2]string{
	"mutex":      {"mutex pair", "mutex pairs"},
	"resource":   {"lost write", "lost writes"},
	"fencing":    {"fencing violation", "fencing violations"},
	"unlock":     {"foreign unlock", "foreign unlocks"},
	"reentrancy": {"reentrancy violation", "reentrancy violations"},
	"liveness":   {"unavailable stretch", "unavailable stretches"},
}

// incidentCounts says what an incident contains: "30 mutex pairs, 2 lost
// writes".
func incidentCounts(in IncidentSummary) string {
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
	for _, c := range checkOrder {
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
func incidentSpan(in IncidentSummary) string {
	return fmt.Sprintf("%s – %s", formatMS(history.MS(in.SpanNS[0])), formatMS(history.MS(in.SpanNS[1])))
}

// incidentFacts is the line under an incident's sentence: span, clients,
// keys, cause and fault, and what it contains.
func incidentFacts(in IncidentSummary) string {
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
func incidentOf(r *Results) map[int]int {
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
func incidentTimelineView(in IncidentSummary) ViolationSummary {
	v := ViolationSummary{Check: "incident", Clients: in.Clients, WindowNS: in.SpanNS, Cause: in.Cause}
	if len(in.Keys) > 0 {
		v.Key = in.Keys[0]
	}
	return v
}
