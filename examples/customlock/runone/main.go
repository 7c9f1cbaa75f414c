// Command runone runs gc-pause on seq-lock from Go through runner.Run and prints each check's verdict.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/lockchaos/lockchaos/cli"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"

	_ "example.com/customlock/seqlock" // registers seq-lock
)

func main() {
	s, err := scenarios.Builtin("gc-pause")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(cli.ExitBadInput)
	}
	out, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: "seq-lock", Expect: true})
	if out == nil || out.Results == nil {
		fmt.Fprintln(os.Stderr, "run failed:", err)
		os.Exit(cli.ExitCodeOf(err))
	}
	for name, c := range out.Results.Checks {
		fmt.Printf("%-12s %s\n", name, c.Verdict)
	}
	fmt.Printf("verdict %s, %s; report in %s\n", out.Results.Verdict, out.Results.Outcome, out.Dir)
	os.Exit(cli.ExitCode(out.Class))
}
