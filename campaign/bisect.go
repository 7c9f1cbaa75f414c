package campaign

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// A bisect (lockchaos bisect) runs one scenario against released versions
// of a lock's library, the same seeds each, and tells per version whether
// the checks that make the finding fail. A driver lock takes each version
// through its version option, here, in process (BisectDriver); a Go
// adapter's versions are built into binaries of their own by
// scripts/bisect-go.sh, which cli runs, and come back as rows of the same
// table.

// A version's verdict, as scripts/bisect-go.sh names them.
const (
	// BisectFails: a check of the bisect's was invalid on at least one seed.
	BisectFails = "fails"
	// BisectPasses: every check of the bisect's valid on every seed.
	BisectPasses = "passes"
	// BisectUnknown: neither (a check unknown or absent, no seed finished).
	BisectUnknown = "unknown"
	// BisectNoBuild: a Go adapter's tidy or build failed at that version.
	BisectNoBuild = "does not build"
	// BisectNoInstall: a driver's library could not be installed at that
	// version.
	BisectNoInstall = "cannot install"
)

// BisectRow is one version's line of the table.
type BisectRow struct {
	Version string `json:"version"`
	// AsRun is the version the runs reported: a driver's hello, a Go
	// binary's build info ("" when nothing ran).
	AsRun string `json:"as_run,omitempty"`
	// Seeds is how many seeds finished with a verdict.
	Seeds int `json:"seeds"`
	// Invalid is, per check of the bisect's, on how many of them it was
	// invalid.
	Invalid map[string]int `json:"invalid,omitempty"`
	// Verdicts counts the runs' overall verdicts (invalid 2, valid 1).
	Verdicts map[string]int `json:"verdicts,omitempty"`
	Verdict  string         `json:"verdict"`
	Seconds  float64        `json:"seconds"`
	// Dir is the version's multi-seed run directory ("" when nothing ran).
	Dir  string `json:"dir,omitempty"`
	Note string `json:"note,omitempty"`
}

// Decided says whether the row has a verdict the conclusion reads.
func (r BisectRow) Decided() bool { return r.Verdict == BisectFails || r.Verdict == BisectPasses }

// Bisect is the table: what ran, and one row per version, oldest first.
type Bisect struct {
	Lock     string `json:"lock"`
	Library  string `json:"library"`
	Scenario string `json:"scenario"`
	// Command is the command line that made it, as the page shows it.
	Command    string      `json:"command,omitempty"`
	Date       string      `json:"date"`
	Seeds      []uint64    `json:"seeds"`
	Checks     []string    `json:"checks"`
	Rows       []BisectRow `json:"rows"`
	Conclusion string      `json:"conclusion"`
	Seconds    float64     `json:"seconds"`
}

// BisectChecks are the checks a bisect counts by default: those the
// expectation exp says are invalid (the finding's), in the checker's
// order.
func BisectChecks(exp map[string]string) []string {
	var out []string
	for _, c := range scenarios.CheckNames {
		if w, err := scenarios.ParseWant(scenarios.WantFor(exp, c)); err == nil && w.Verdict == "invalid" {
			out = append(out, c)
		}
	}
	return out
}

// BisectRowOf is version's row from its seeds' summary: each check's
// invalid count over the seeds that finished, the runs' verdicts, and the
// verdict (fails when a check was invalid on a seed, passes when every
// check was valid on every seed, unknown otherwise).
func BisectRowOf(version string, sum *SeedSummary, checks []string) BisectRow {
	r := BisectRow{Version: version, Invalid: map[string]int{}, Verdict: BisectUnknown}
	if sum == nil {
		return r
	}
	r.Verdicts = maps.Clone(sum.Verdicts)
	undecided := false
	for _, run := range sum.Runs {
		if run.Verdict == "" {
			continue
		}
		r.Seeds++
		for _, c := range checks {
			switch run.Checks[c] {
			case "invalid":
				r.Invalid[c]++
			case "valid":
			default:
				undecided = true
			}
		}
	}
	for _, c := range checks {
		if r.Invalid[c] > 0 {
			r.Verdict = BisectFails
			return r
		}
	}
	if r.Seeds > 0 && !undecided {
		r.Verdict = BisectPasses
	}
	return r
}

// BisectPlan is a driver lock's bisect: Options is one run's (scenario,
// lock, backend) with Out the bisect's directory, each version's runs
// going to Out/<version>.
type BisectPlan struct {
	Options  runner.Options
	Seeds    []uint64
	Checks   []string
	Versions []string
	// Timeout bounds one version's install and runs (0: none).
	Timeout time.Duration
	// Install, when set, makes version available to the driver before its
	// runs, writing what it did to log; its error is the row's note.
	Install func(ctx context.Context, version, log string) error
	// OnVersion is called as a version starts, OnRow when its row is done.
	OnVersion func(version string)
	OnRow     func(BisectRow)
}

// BisectDriver runs p's versions one after another, oldest first, each
// over p.Seeds with the lock option version set. A version that cannot be
// installed or does not run is a row that says why; the rows are returned
// even when ctx ends the bisect early.
func BisectDriver(ctx context.Context, p BisectPlan) []BisectRow {
	var rows []BisectRow
	for _, v := range SortVersions(p.Versions) {
		if ctx.Err() != nil {
			break
		}
		if p.OnVersion != nil {
			p.OnVersion(v)
		}
		r := bisectVersion(ctx, p, v)
		rows = append(rows, r)
		if p.OnRow != nil {
			p.OnRow(r)
		}
	}
	return rows
}

// VersionDir is the name a version's files take in the bisect's
// directory (a slash would make a folder).
func VersionDir(v string) string { return strings.ReplaceAll(v, "/", "_") }

// bisectVersion installs and runs one version.
func bisectVersion(ctx context.Context, p BisectPlan, v string) BisectRow {
	start := time.Now()
	vctx, cancel := ctx, context.CancelFunc(func() {})
	if p.Timeout > 0 {
		vctx, cancel = context.WithTimeout(ctx, p.Timeout)
	}
	defer cancel()
	timedOut := func(r *BisectRow) {
		r.Seconds = time.Since(start).Seconds()
		if errors.Is(vctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			r.Note = joinNote(r.Note, fmt.Sprintf("timed out after %s", p.Timeout))
		}
	}
	if p.Install != nil {
		if err := p.Install(vctx, v, filepath.Join(p.Options.Out, VersionDir(v)+".install.log")); err != nil {
			r := BisectRow{Version: v, Verdict: BisectNoInstall, Note: err.Error()}
			timedOut(&r)
			return r
		}
	}
	o := p.Options
	sc := *o.Scenario
	sc.Lock.Extra = maps.Clone(sc.Lock.Extra)
	if sc.Lock.Extra == nil {
		sc.Lock.Extra = map[string]string{}
	}
	sc.Lock.Extra["version"] = v
	o.Scenario, o.Out, o.Progress = &sc, filepath.Join(p.Options.Out, VersionDir(v)), nil
	asRun := ""
	sum, err := RunSeeds(vctx, o, p.Seeds, func(_ SeedRun, out *runner.Outcome) {
		if out != nil && out.Results != nil {
			if s, _ := out.Results.LockConfig["version"].(string); s != "" {
				asRun = s
			}
		}
	})
	r := BisectRowOf(v, sum, p.Checks)
	r.AsRun, r.Dir = asRun, o.Out
	if asRun != "" && asRun != v {
		r.Note = joinNote(r.Note, fmt.Sprintf("the driver ran %s, not %s", asRun, v))
	}
	if r.Seeds == 0 {
		r.Note = joinNote(r.Note, "no seed finished: "+firstRunError(sum, err))
	}
	if ctx.Err() != nil {
		r.Note = joinNote(r.Note, fmt.Sprintf("interrupted (%d of %d seeds with a verdict)", r.Seeds, len(p.Seeds)))
	}
	timedOut(&r)
	return r
}

// firstRunError is why no seed finished: the first seed's error, else
// the bisect's.
func firstRunError(sum *SeedSummary, err error) string {
	if sum != nil {
		for _, r := range sum.Runs {
			if r.Error != "" {
				return oneLine(r.Error)
			}
		}
	}
	if err != nil {
		return oneLine(err.Error())
	}
	return "no run"
}

// oneLine is s's first line, at most 200 characters, without the table's
// column separator.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
