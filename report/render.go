// Package report renders what people and CI read from a run's numbers
// (package metrics): summary.md, report.html, the plots (PNG and SVG), the
// text and JUnit outputs, and the Markdown of a bench, a matrix, a
// multi-seed run and a comparison. It reads files and never talks to
// Redis.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// renderNotePrefix marks the notes Render adds, so that a re-render
// replaces them instead of piling them up.
const renderNotePrefix = "report: "

// Files Render writes into a run directory, besides results.json
// (metrics.ResultsFile), plots and .hgrm files.
const (
	SummaryFile = "summary.md"
	HTMLFile    = "report.html"
)

// Render writes the run's report into dir: results.json, summary.md,
// report.html, the plots (PNG and SVG: latency-percentiles,
// latency-over-time, throughput-over-time, timeline-<n> per violation,
// incident-<id> per incident) and
// <op>.hgrm per latency distribution. a may be nil (no history): then only
// the text outputs are written.
//
// A plot or .hgrm that fails is recorded in r.Notes and the rest is still
// written; the error returned is only for results.json, summary.md or
// report.html that could not be written.
func Render(dir string, r *metrics.Results, a *metrics.Analysis) error {
	return RenderWith(dir, r, a, RenderOptions{})
}

// RenderOptions tune RenderWith.
type RenderOptions struct {
	// NoPlots skips the PNG/SVG plots (most of the rendering time; a matrix
	// of hundreds of runs needs its verdicts, not their pictures). `lockchaos
	// report DIR` renders them later.
	NoPlots bool
}

// RenderWith is Render with options.
func RenderWith(dir string, r *metrics.Results, a *metrics.Analysis, o RenderOptions) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	keep := r.Notes[:0:0]
	for _, n := range r.Notes {
		if !strings.HasPrefix(n, renderNotePrefix) {
			keep = append(keep, n)
		}
	}
	r.Notes = keep
	note := func(format string, args ...any) {
		r.Notes = append(r.Notes, renderNotePrefix+fmt.Sprintf(format, args...))
	}

	art := artifacts{dir: dir, timelines: map[int]string{}}
	if a != nil && o.NoPlots {
		note("plots not rendered (lockchaos report %s renders them)", dir)
	}
	if a != nil && !o.NoPlots {
		plots := []struct {
			base string
			fn   func(*metrics.Analysis, string) error
		}{
			{"latency-percentiles", PlotPercentiles},
			{"latency-over-time", PlotLatencyOverTime},
			{"throughput-over-time", PlotThroughput},
		}
		for _, p := range plots {
			err := p.fn(a, filepath.Join(dir, p.base))
			switch {
			case errors.Is(err, errNoData):
			case err != nil:
				note("plot %s failed: %v", p.base, err)
			default:
				art.plots = append(art.plots, p.base)
			}
		}
		names, incNames, errs := plotAllTimelines(dir, a, r.Violations, r.Incidents)
		art.timelines, art.incidentTimelines = names, incNames
		for _, err := range errs {
			if !errors.Is(err, errNoData) {
				note("timeline plot failed: %v", err)
			}
		}
	}
	if a != nil {
		for _, op := range metrics.Ops {
			h := a.Histograms[op]
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			name := op + ".hgrm"
			if err := metrics.WriteHgrmFile(filepath.Join(dir, name), op, h); err != nil {
				note("%s: %v", name, err)
				continue
			}
			art.hgrm = append(art.hgrm, name)
		}
	}

	var errs []error
	if err := metrics.WriteJSON(filepath.Join(dir, metrics.ResultsFile), r); err != nil {
		errs = append(errs, err)
	}
	var md bytes.Buffer
	if err := writeSummaryMarkdown(&md, r, art); err == nil {
		errs = append(errs, writeBytes(filepath.Join(dir, SummaryFile), md.Bytes()))
	} else {
		errs = append(errs, fmt.Errorf("summary.md: %w", err))
	}
	var html bytes.Buffer
	if err := writeHTML(&html, buildHTMLData(r, a, art)); err == nil {
		errs = append(errs, writeBytes(filepath.Join(dir, HTMLFile), html.Bytes()))
	} else {
		errs = append(errs, fmt.Errorf("report.html: %w", err))
	}
	return errors.Join(errs...)
}

func writeBytes(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
