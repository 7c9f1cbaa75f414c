package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner"
)

// newProgress returns a progress display: one rewritten status line on a
// terminal, plain periodic lines otherwise (CI logs).
func newProgress(w io.Writer, scenario, lock string) func(runner.Progress) {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	last := time.Time{}
	return func(p runner.Progress) {
		line := fmt.Sprintf("%s/%s %-8s %5.1fs/%.1fs  %8.0f cycles/s  %7d cycles  overlaps %d  faults active %d fired %d",
			scenario, lock, p.Phase, p.Elapsed.Seconds(), p.Total.Seconds(), p.CyclesPerSec, p.Cycles, p.Overlaps, p.ActiveFaults, p.FaultsFired)
		if l := p.Live; l != nil {
			line += "  " + liveText(*l)
		}
		if tty {
			fmt.Fprintf(w, "\r\033[K%s", line)
			if p.Elapsed >= p.Total {
				fmt.Fprintln(w)
			}
			return
		}
		if time.Since(last) >= 5*time.Second || p.Phase != "workload" {
			fmt.Fprintln(w, line)
			last = time.Now()
		}
	}
}

// liveText is the live check's part of the progress line.
func liveText(l checker.Live) string {
	switch {
	case l.Behind:
		return "live: fell behind (checked after the run)"
	case l.Violations > 0:
		v := l.Latest
		return fmt.Sprintf("live: INVALID %d violations to %.1fs (latest: %s on %s at %.3fs, %s)", l.Violations, float64(l.JudgedToNS)/1e9, v.Check, v.Key, v.AtMS/1e3, v.Cause)
	}
	return fmt.Sprintf("live: %s to %.1fs", l.Verdict, float64(l.JudgedToNS)/1e9)
}
