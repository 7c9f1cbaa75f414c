// Package cli holds lockchaos's cobra commands: it parses flags, calls the
// library packages and prints; exit codes are decided here.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/runner"
)

// message renders err for the terminal: an option the runner names
// (runner.Error.Field) is shown as its flag, --field.
func message(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if re, ok := e.(*runner.Error); ok && re.Field != "" && re.Err != nil {
			return strings.Replace(msg, re.Error(), "--"+re.Field+": "+re.Err.Error(), 1)
		}
	}
	return msg
}

// Main runs the CLI and returns the process exit code. The first Ctrl-C (or
// SIGTERM) stops the run gracefully — faults healed, servers stopped, the
// partial history checked and reported; a second one exits at once (child
// Redis processes die with the harness through their parent-death signal).
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for range sigs {
			n++
			if n == 1 {
				fmt.Fprintln(stderr, "lockchaos: interrupted; stopping the run (again to quit at once)")
				cancel()
				continue
			}
			os.Exit(130)
		}
	}()

	// go-redis logs reconnects and sentinel choices on its own; during fault
	// runs those are expected and would bury the progress line. The runner
	// sends them to each run's go-redis.log (runner.RedisLogFile), and to
	// stderr too with LOCKCHAOS_DEBUG=1.

	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	var re *runner.Error
	switch {
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintln(stderr, "lockchaos:", message(ee.err))
		}
		return ee.code
	case errors.As(err, &re):
		if re.Err != nil {
			fmt.Fprintln(stderr, "lockchaos:", message(re))
		}
		return ExitCode(re.Class)
	}
	// cobra's own errors (unknown flag, bad value, wrong arg count): bad input.
	fmt.Fprintln(stderr, "lockchaos:", err)
	if errors.Is(err, context.Canceled) {
		return ExitUnknown
	}
	return ExitBadInput
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "lockchaos",
		Short: "Tell whether a Redis distributed lock is safe and how fast it is",
		Long: `lockchaos drives Redis lock implementations with contention workloads while
faults hit the clients, the servers, the network and the clocks; it records
every operation, checks the history for mutual exclusion, resource safety,
fencing, owner-only unlock, reentrancy and liveness, and reports latency.

Exit codes: 0 as expected, 1 violation or failed threshold, 2 unknown or
inconclusive, 3 bad input, 4 infrastructure failure.`,
		Example: `  lockchaos run smoke --lock simple
  lockchaos run gc-pause --lock fenced --backend process --out runs/gc
  lockchaos check runs/gc
  lockchaos list locks`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version: the build a CI log names at its top (lockchaos version
		// prints every field).
		Version: readBuildInfo().short(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	discoverDrivers(stderr)
	root.AddCommand(newRunCmd(stdout, stderr), newCheckCmd(stdout), newReportCmd(stdout), newListCmd(stdout), newExportCmd(stdout), newCleanCmd(stdout),
		newWorkerCmd(stdout, stderr), newMergeCmd(stdout), newK8sCmd(stdout))
	for _, extra := range extraCommands {
		root.AddCommand(extra(stdout, stderr))
	}
	return root
}

// extraCommands are added by other files of this package (matrix, bench,
// compare) so each command lives in its own file.
var extraCommands []func(stdout, stderr io.Writer) *cobra.Command
