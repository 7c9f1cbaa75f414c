package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/scenarios"
)

// listScenarios prints the catalog, then the pause-point sweep (named as
// the catalog is: run, matrix --scenarios).
func listScenarios(w io.Writer) error {
	all, err := scenarios.All()
	if err != nil {
		return exitWith(ExitBadInput, err)
	}
	sweep, err := scenarios.Sweep()
	if err != nil {
		return exitWith(ExitBadInput, err)
	}
	all = append(all, sweep...)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTOPOLOGY\tFAULTS\tREPRODUCES\tDESCRIPTION")
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.Name, s.Topology, len(s.Faults), s.Reproduces, firstSentence(s.Description))
	}
	return tw.Flush()
}

func listLocks(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tCAPABILITIES\tDESCRIPTION")
	for _, l := range lockimpl.List() {
		d := l.Description
		if lib := l.Library(); lib != "" {
			d += " (" + lib + ", as built into this binary)"
		}
		if l.Mistake != "" {
			d += " — mistake: " + l.Mistake
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Name, l.Kind, l.Capabilities(), d)
	}
	tw.Flush()
}

// listControls prints each broken control with the catalog scenarios that
// assert it caught (scenarios.Catches), comma-separated for scripts (CI's
// mutation check runs them over more seeds).
func listControls(w io.Writer) error {
	all, err := scenarios.All()
	if err != nil {
		return exitWith(ExitBadInput, err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTROL\tCAUGHT-BY")
	for _, l := range lockimpl.List() {
		if l.Kind != lockimpl.Broken {
			continue
		}
		c := strings.Join(scenarios.Catches(l.Name, all), ",")
		if c == "" {
			c = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\n", l.Name, c)
	}
	return tw.Flush()
}

func listFaults(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tDESCRIPTION")
	for _, k := range faults.Kinds() {
		fmt.Fprintf(tw, "%s\t%s\n", k.Name, k.Description)
	}
	tw.Flush()
}

func firstSentence(s string) string {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && (s[i+1] == ' ' || s[i+1] == '\n') {
			return s[:i+1]
		}
	}
	return s
}
