package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/scenarios"
)

// MatrixOptions run locks × scenarios.
type MatrixOptions struct {
	Locks     []string              // default: every registered lock except user locks
	Scenarios []*scenarios.Scenario // default: the whole catalog
	Out       string                // each cell in Out/<scenario>/<lock>
	Parallel  int                   // cells at once; default 1
	// Retries re-runs a cell whose outcome was not as expected up to this
	// many times. The scenarios are timing experiments on a shared machine;
	// a retried cell says so in matrix.md and keeps every attempt's run dir.
	Retries int
	// Base carries the cluster settings (backend, binaries, ...).
	Base Options
	// OnCell is called as each cell finishes (for progress output).
	OnCell func(c Cell)
}

// Cell is one lock × scenario outcome.
type Cell struct {
	Scenario   string            `json:"scenario"`
	Lock       string            `json:"lock"`
	Applicable bool              `json:"applicable"`
	Reason     string            `json:"reason,omitempty"` // why not applicable, or the error
	Verdict    string            `json:"verdict,omitempty"`
	Checks     map[string]string `json:"checks,omitempty"`
	Expected   map[string]string `json:"expected,omitempty"`
	Outcome    string            `json:"outcome"` // as-expected | unexpected | unknown | n/a | error
	Causes     []string          `json:"causes,omitempty"`
	Incidents  int               `json:"incidents,omitempty"` // violations grouped (results.json incidents)
	Dir        string            `json:"dir,omitempty"`
	Throughput float64           `json:"throughput,omitempty"`
	Notes      []string          `json:"notes,omitempty"`
	// Attempts is how many runs the cell took (more than 1: retried).
	Attempts int `json:"attempts,omitempty"`
}

// Matrix is the whole table.
type Matrix struct {
	Locks     []string `json:"locks"`
	Scenarios []string `json:"scenarios"`
	Cells     []Cell   `json:"cells"`
	ExitCode  int      `json:"exit_code"`
}

// Applicable says whether a lock can run in a scenario's topology.
func Applicable(info lockimpl.Info, s *scenarios.Scenario) (bool, string) {
	if len(s.Locks) > 0 {
		for _, l := range s.Locks {
			if l == info.Name {
				return true, ""
			}
		}
		return false, "scenario is meant for " + strings.Join(s.Locks, ", ")
	}
	if info.NeedsReplicas && s.Topology != "sentinel" {
		return false, "needs a replica (sentinel topology)"
	}
	if info.MinNodes > 1 && s.Topology != "independent" {
		return false, fmt.Sprintf("needs %d independent masters", info.MinNodes)
	}
	return true, ""
}

// RunMatrix runs every applicable cell and returns the table with its exit
// code: 1 if any cell was unexpected, else 2 if any was unknown, else 0.
func RunMatrix(ctx context.Context, o MatrixOptions) (*Matrix, error) {
	if len(o.Locks) == 0 {
		for _, l := range lockimpl.List() {
			if l.Kind != lockimpl.User {
				o.Locks = append(o.Locks, l.Name)
			}
		}
	}
	if o.Base.KeyPrefix != "" {
		// Each cell's keys go under the prefix plus the cell's number, so
		// cells run in parallel do not meet each other's keys.
		if err := keyspace.Check(o.Base.KeyPrefix + "0000:"); err != nil {
			return nil, fail(ExitBadInput, "--key-prefix: %v", err)
		}
	}
	infos := map[string]lockimpl.Info{}
	for _, l := range o.Locks {
		info, _, err := lockimpl.Lookup(l)
		if err != nil {
			return nil, fail(ExitBadInput, "--locks: %v", err)
		}
		infos[l] = info
	}
	if len(o.Scenarios) == 0 {
		all, err := scenarios.All()
		if err != nil {
			return nil, fail(ExitBadInput, "%v", err)
		}
		o.Scenarios = all
	}
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	m := &Matrix{Locks: o.Locks}
	type job struct {
		i    int
		s    *scenarios.Scenario
		lock string
	}
	var jobs []job
	for _, s := range o.Scenarios {
		m.Scenarios = append(m.Scenarios, s.Name)
		for _, l := range o.Locks {
			c := Cell{Scenario: s.Name, Lock: l, Outcome: "n/a"}
			ok, why := Applicable(infos[l], s)
			c.Applicable, c.Reason = ok, why
			m.Cells = append(m.Cells, c)
			if ok {
				jobs = append(jobs, job{len(m.Cells) - 1, s, l})
			}
		}
	}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := runCell(ctx, o, j.s, j.lock, "", j.i)
			c.Attempts = 1
			for a := 2; a <= o.Retries+1 && c.Outcome != "as-expected" && ctx.Err() == nil; a++ {
				prev := c
				c = runCell(ctx, o, j.s, j.lock, fmt.Sprintf("-attempt%d", a), j.i)
				c.Attempts = a
				c.Notes = append(c.Notes, fmt.Sprintf("attempt %d was %s (verdict %s, checks %v) in %s", a-1, prev.Outcome, prev.Verdict, prev.Checks, prev.Dir))
			}
			mu.Lock()
			m.Cells[j.i] = c
			mu.Unlock()
			if o.OnCell != nil {
				o.OnCell(c)
			}
		}()
	}
	wg.Wait()
	unexpected, unknown := false, false
	for _, c := range m.Cells {
		switch c.Outcome {
		case "unexpected", "error":
			unexpected = true
		case "unknown":
			unknown = true
		}
	}
	switch {
	case unexpected:
		m.ExitCode = ExitViolated
	case unknown || ctx.Err() != nil:
		m.ExitCode = ExitUnknown
	}
	return m, nil
}

func runCell(ctx context.Context, o MatrixOptions, s *scenarios.Scenario, lock, suffix string, cell int) Cell {
	c := Cell{Scenario: s.Name, Lock: lock, Applicable: true}
	ro := o.Base
	if ro.KeyPrefix != "" {
		ro.KeyPrefix += strconv.Itoa(cell) + ":"
	}
	ro.Scenario, ro.Lock, ro.Expect, ro.Progress = s, lock, true, nil
	ro.Out = filepath.Join(o.Out, s.Name, lock+suffix)
	c.Dir = ro.Out
	out, err := Run(ctx, ro)
	if out == nil || out.Results == nil {
		c.Outcome, c.Reason = "error", fmt.Sprint(err)
		return c
	}
	r := out.Results
	c.Verdict, c.Expected, c.Outcome, c.Throughput, c.Notes = r.Verdict, r.Expected, r.Outcome, r.Stats.Throughput, r.Notes
	c.Checks = map[string]string{}
	for n, ch := range r.Checks {
		c.Checks[n] = ch.Verdict
	}
	seen := map[string]bool{}
	for _, v := range r.Violations {
		if !seen[v.Cause] {
			seen[v.Cause] = true
			c.Causes = append(c.Causes, v.Cause)
		}
	}
	sort.Strings(c.Causes)
	c.Incidents = len(r.Incidents)
	if err != nil && c.Outcome == "as-expected" {
		c.Outcome, c.Reason = "unknown", err.Error()
	}
	return c
}

// WriteMatrix writes matrix.json, matrix.md and the verdict grid plot.
func WriteMatrix(dir string, m *Matrix) error {
	if err := report.WriteJSON(filepath.Join(dir, "matrix.json"), m); err != nil {
		return err
	}
	var cells []report.MatrixCell
	for _, c := range m.Cells {
		cells = append(cells, report.MatrixCell{Scenario: c.Scenario, Lock: c.Lock, Verdict: cellVerdict(c), Expected: c.Outcome != "unexpected" && c.Outcome != "error"})
	}
	var notes []string
	if err := report.PlotMatrix(cells, filepath.Join(dir, "matrix")); err != nil {
		notes = append(notes, "matrix plot: "+err.Error())
	}
	return writeFile(filepath.Join(dir, "matrix.md"), MatrixMarkdown(m, notes))
}

func cellVerdict(c Cell) string {
	if !c.Applicable {
		return "n/a"
	}
	if c.Verdict == "" {
		return "error"
	}
	return c.Verdict
}

// MatrixMarkdown renders the table: one row per scenario, one column per
// lock; each cell the verdict, ✓ when it matched the expectation, ✗ when not.
func MatrixMarkdown(m *Matrix, notes []string) string {
	var b strings.Builder
	unexpected := 0
	for _, c := range m.Cells {
		if c.Outcome == "unexpected" || c.Outcome == "error" {
			unexpected++
		}
	}
	fmt.Fprintf(&b, "# lockchaos matrix\n\n%d scenarios × %d locks; %d cells unexpected; exit code %d.\n\n", len(m.Scenarios), len(m.Locks), unexpected, m.ExitCode)
	b.WriteString("Each cell: the overall verdict, then `ok` when every check matched the scenario's expectation for that lock, `UNEXPECTED` when not; `–` not applicable. Then the number of incidents (violations grouped by cause and the fault or lease they share), causes of violations in brackets.\n\n")
	b.WriteString("| scenario |")
	for _, l := range m.Locks {
		b.WriteString(" " + l + " |")
	}
	b.WriteString("\n|---|")
	for range m.Locks {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	idx := map[string]Cell{}
	for _, c := range m.Cells {
		idx[c.Scenario+"\x00"+c.Lock] = c
	}
	for _, s := range m.Scenarios {
		b.WriteString("| " + s + " |")
		for _, l := range m.Locks {
			c := idx[s+"\x00"+l]
			switch {
			case !c.Applicable:
				b.WriteString(" – |")
			case c.Outcome == "error":
				b.WriteString(" error UNEXPECTED |")
			default:
				mark := "ok"
				if c.Outcome == "unexpected" {
					mark = "UNEXPECTED"
				} else if c.Outcome == "unknown" {
					mark = "unknown"
				}
				if c.Attempts > 1 {
					mark += fmt.Sprintf(" (attempt %d)", c.Attempts)
				}
				cause := ""
				switch {
				case c.Incidents == 1:
					cause = " · 1 incident"
				case c.Incidents > 1:
					cause = fmt.Sprintf(" · %d incidents", c.Incidents)
				}
				if len(c.Causes) > 0 {
					cause += " [" + strings.Join(c.Causes, ", ") + "]"
				}
				fmt.Fprintf(&b, " %s %s%s |", c.Verdict, mark, cause)
			}
		}
		b.WriteString("\n")
	}
	var bad []Cell
	for _, c := range m.Cells {
		if c.Outcome == "unexpected" || c.Outcome == "error" || c.Outcome == "unknown" {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		b.WriteString("\n## Cells that did not match\n\n")
		for _, c := range bad {
			fmt.Fprintf(&b, "- **%s / %s**: %s %s; checks %v; expected %v; run dir `%s`\n", c.Scenario, c.Lock, c.Outcome, c.Reason, c.Checks, c.Expected, c.Dir)
			for _, n := range c.Notes {
				fmt.Fprintf(&b, "  - %s\n", n)
			}
		}
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	return b.String()
}
