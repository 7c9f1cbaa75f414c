package campaign

import (
	"fmt"
	"strings"

	"github.com/lockchaos/lockchaos/scenarios"
)

// The bisect's table, its one-line conclusion, and the block a findings
// page carries between its markers.

// BisectConclusion reads the rows (oldest first) as one line: the first
// version tried where the checks stop failing ("fixed in X"), or start
// ("broken in X"), or that every version tried fails or passes; versions
// without a verdict are named after it.
func BisectConclusion(rows []BisectRow) string {
	var decided []BisectRow
	var undecided []string
	fails := 0
	for _, r := range rows {
		if !r.Decided() {
			undecided = append(undecided, fmt.Sprintf("%s (%s)", r.Version, r.Verdict))
			continue
		}
		decided = append(decided, r)
		if r.Verdict == BisectFails {
			fails++
		}
	}
	var s string
	switch {
	case len(decided) == 0:
		s = "no version tried has a verdict"
	case fails == len(decided):
		s = "fails on every version tried (" + versionSpan(decided) + ")"
	case fails == 0:
		s = "passes on every version tried (" + versionSpan(decided) + ")"
	default:
		s = boundary(decided)
	}
	if len(undecided) > 0 {
		s += "; no verdict: " + strings.Join(undecided, ", ")
	}
	return s + "."
}

// boundary is the conclusion of rows that both fail and pass: the version
// where the verdict changes when it changes once, else which fail and
// which pass.
func boundary(rows []BisectRow) string {
	var at []int
	for i := 1; i < len(rows); i++ {
		if rows[i].Verdict != rows[i-1].Verdict {
			at = append(at, i)
		}
	}
	if len(at) == 1 {
		i := at[0]
		if rows[i].Verdict == BisectPasses {
			return fmt.Sprintf("fixed in %s: fails on %s, passes from %s on (%s)", rows[i].Version, versionSpan(rows[:i]), rows[i].Version, versionSpan(rows[i:]))
		}
		return fmt.Sprintf("broken in %s: passes on %s, fails from %s on (%s)", rows[i].Version, versionSpan(rows[:i]), rows[i].Version, versionSpan(rows[i:]))
	}
	var f, p []string
	for _, r := range rows {
		if r.Verdict == BisectFails {
			f = append(f, r.Version)
		} else {
			p = append(p, r.Version)
		}
	}
	return fmt.Sprintf("no single boundary: fails on %s; passes on %s", strings.Join(f, ", "), strings.Join(p, ", "))
}

// versionSpan is "5.1.0" or "5.1.0 to 5.8.0" (with how many were tried
// in between when more than two).
func versionSpan(rows []BisectRow) string {
	switch n := len(rows); n {
	case 1:
		return rows[0].Version
	case 2:
		return rows[0].Version + " and " + rows[1].Version
	default:
		return fmt.Sprintf("%d versions, %s to %s", n, rows[0].Version, rows[n-1].Version)
	}
}

// BisectTable is the rows as a Markdown table: per version the version
// run, each check's invalid count over the seeds that finished, the runs'
// verdicts, the version's verdict, its seconds (install or build
// included), its run directory and a note.
func BisectTable(b *Bisect) string {
	var w strings.Builder
	w.WriteString("| version | as run |")
	for _, c := range b.Checks {
		fmt.Fprintf(&w, " %s invalid |", c)
	}
	w.WriteString(" verdicts | verdict | seconds | run directory | note |\n|---|---|")
	w.WriteString(strings.Repeat("---|", len(b.Checks)))
	w.WriteString("---|---|---:|---|---|\n")
	for _, r := range b.Rows {
		fmt.Fprintf(&w, "| %s | %s |", r.Version, dash(r.AsRun))
		for _, c := range b.Checks {
			cell := "–"
			if r.Seeds > 0 {
				cell = fmt.Sprintf("%d/%d", r.Invalid[c], r.Seeds)
			}
			fmt.Fprintf(&w, " %s |", cell)
		}
		verdicts := ""
		if len(r.Verdicts) > 0 {
			verdicts = scenarios.VerdictCounts(r.Verdicts)
		}
		dir := "–"
		if r.Dir != "" {
			dir = "`" + r.Dir + "`"
		}
		fmt.Fprintf(&w, " %s | %s | %.0f | %s | %s |\n", dash(verdicts), r.Verdict, r.Seconds, dir, dash(oneLine(r.Note)))
	}
	return w.String()
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// BisectMarkdown is the bisect's document (bisect.md): what ran, the
// table and the conclusion.
func BisectMarkdown(b *Bisect) string {
	return fmt.Sprintf("# %s (%s): %s\n\n%s\n\n%s\n**Conclusion:** %s\n", b.Lock, b.Library, b.Scenario, bisectPreamble(b), BisectTable(b), b.Conclusion)
}

// bisectPreamble says what ran and how a verdict is read.
func bisectPreamble(b *Bisect) string {
	what := "`" + b.Command + "`"
	if b.Command == "" {
		what = fmt.Sprintf("%s with `%s`", b.Scenario, b.Lock)
	}
	return fmt.Sprintf("%s (%s, %.0f s in all): seeds %s per version; a version fails when %s is invalid on a seed, passes when %s valid on every seed.",
		what, b.Date, b.Seconds, SeedsText(b.Seeds), orList(b.Checks), andList(b.Checks))
}

func orList(cs []string) string {
	if len(cs) == 1 {
		return cs[0]
	}
	return strings.Join(cs[:len(cs)-1], ", ") + " or " + cs[len(cs)-1]
}

func andList(cs []string) string {
	if len(cs) == 1 {
		return cs[0] + " is"
	}
	return strings.Join(cs[:len(cs)-1], ", ") + " and " + cs[len(cs)-1] + " are"
}

// SeedsText is a seed list as ParseSeeds reads it: 1-5, 1-3,7.
func SeedsText(seeds []uint64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		} else {
			parts = append(parts, fmt.Sprint(seeds[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// BisectMarkers are the comments that bound lock's table in a page.
func BisectMarkers(lock string) (begin, end string) {
	return "<!-- bisect:begin " + lock + " -->", "<!-- bisect:end " + lock + " -->"
}

// BisectBlock is the table as a page carries it: between its markers,
// what ran, the table and the conclusion.
func BisectBlock(b *Bisect) string {
	begin, end := BisectMarkers(b.Lock)
	return fmt.Sprintf("%s\n%s\n\n%s\n**Conclusion:** %s\n%s", begin, bisectPreamble(b), BisectTable(b), b.Conclusion, end)
}

// ReplaceBisectBlock puts block into page: in place of the lock's block
// when the page has its markers, else at the end of its "## Versions"
// section, else in a new one at the end; where says which.
func ReplaceBisectBlock(page, lock, block string) (out, where string) {
	begin, end := BisectMarkers(lock)
	if i := strings.Index(page, begin); i >= 0 {
		if j := strings.Index(page[i:], end); j >= 0 {
			return page[:i] + block + page[i+j+len(end):], "replaced its block"
		}
	}
	if i := sectionStart(page, "## Versions"); i >= 0 {
		rest := page[i:]
		k := strings.Index(rest[1:], "\n## ")
		if k < 0 {
			return strings.TrimRight(page, "\n") + "\n\n" + block + "\n", "added at the end of ## Versions"
		}
		cut := i + 1 + k
		return strings.TrimRight(page[:cut], "\n") + "\n\n" + block + "\n" + page[cut:], "added at the end of ## Versions"
	}
	return strings.TrimRight(page, "\n") + "\n\n## Versions\n\n" + block + "\n", "added as a new ## Versions section"
}

// sectionStart is the offset of the line that is heading, or -1.
func sectionStart(page, heading string) int {
	if strings.HasPrefix(page, heading+"\n") {
		return 0
	}
	if i := strings.Index(page, "\n"+heading+"\n"); i >= 0 {
		return i + 1
	}
	return -1
}
