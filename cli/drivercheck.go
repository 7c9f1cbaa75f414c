package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
	"github.com/lockchaos/lockchaos/report"
)

func init() { extraCommands = append(extraCommands, newDriverCmd) }

func newDriverCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "driver",
		Short: "Tools for driver authors: check a driver against the lock-client protocol",
	}
	cmd.AddCommand(newDriverCheckCmd(stdout, stderr))
	return cmd
}

func newDriverCheckCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		lockOptList []string
		ttl         time.Duration
		ci          ciFlags
	)
	cmd := &cobra.Command{
		Use:   "check LOCK-FILE|exec:COMMAND|NAME",
		Short: "Check a driver against the lock-client protocol before any scenario runs it",
		Long: `driver check starts a redis-server of its own and two processes of the driver
(docs/driver-protocol.md), and holds them to the protocol step by step: hello's
fields, init, an acquire and its connection names (CLIENT LIST) and keys (under
key_prefix or reported in acquired.keys), a refusal with wait_ms 0, a wait of
wait_ms, ping and clock answered while an acquire waits, a release, a release
after the lease expired (its process stopped for 2×TTL) that must leave the next
holder's key, acquire and release against a stopped server (indeterminate or
error, never a refusal), every call within its bound, and shutdown. Each check
that fails says which message and field, and what the protocol wants.

Exit codes: 0 every check passed, 1 a check failed, 3 bad input, 4 infrastructure
(no redis-server).`,
		Example: `  lockchaos driver check drivers/python/redis-py.yaml
  lockchaos driver check 'exec:python3 my_driver.py' --junit driver-check.xml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ci.check(); err != nil {
				return err
			}
			spec, err := driverSpec(args[0])
			if err != nil {
				return exitWith(ExitBadInput, err)
			}
			extra, err := lockOpts(lockOptList, spec.Options)
			if err != nil {
				return exitWith(ExitBadInput, err)
			}
			res, err := runDriverCheck(cmd.Context(), spec, extra, ttl)
			if err != nil {
				return exitWith(ExitInfra, err)
			}
			code := printDriverCheck(stdout, args[0], res)
			cases := driverCheckCases(args[0], res)
			if c := ci.write(stderr, "lockchaos driver check", cases, "", code); c != ExitOK {
				return exitWith(c, nil)
			}
			return nil
		},
	}
	ci.add(cmd)
	cmd.Flags().StringArrayVar(&lockOptList, "lock-opt", nil, "a lock option key=value, repeatable (over the lock file's options)")
	cmd.Flags().DurationVar(&ttl, "ttl", 2*time.Second, "the lease the check asks for")
	return cmd
}

// driverSpec is the driver a check runs: a lock file, exec:<command>, or
// a registered driver lock's name. Not driver.Resolve: it registers the
// driver, which starts it for its hello, and a driver whose hello is broken
// must reach the hello check, not fail before it.
func driverSpec(v string) (*driver.Spec, error) {
	if cmd, ok := strings.CutPrefix(v, "exec:"); ok {
		return driver.ExecSpec(cmd)
	}
	if s, ok := driver.Lookup(v); ok {
		return s, nil
	}
	if _, err := os.Stat(v); err == nil {
		return driver.LoadSpec(v)
	}
	return nil, fmt.Errorf("%s: not a lock file, exec:<command> or a driver lock's name", v)
}

// runDriverCheck starts a redis-server (process backend) and runs the
// checks against it.
func runDriverCheck(ctx context.Context, spec *driver.Spec, extra map[string]string, ttl time.Duration) ([]driver.CheckResult, error) {
	dir, err := os.MkdirTemp("", "lockchaos-driver-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cl, err := cluster.Start(ctx, cluster.Spec{Topology: cluster.Single, Backend: "process", Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("a redis-server for the check: %w", err)
	}
	defer cl.Stop()
	n := cl.Nodes[0]
	admin := cl.AdminClient(n)
	defer admin.Close()
	return driver.RunCheck(ctx, driver.CheckOptions{Spec: spec, Extra: extra, TTL: ttl,
		Server: driver.CheckServer{Addr: n.Addr, Admin: admin, Pause: n.Ctl.Pause, Resume: n.Ctl.Resume}}), nil
}

// printDriverCheck prints one line per check and returns the exit code.
func printDriverCheck(w io.Writer, lock string, res []driver.CheckResult) int {
	fmt.Fprintf(w, "driver check %s\n", lock)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	failed := 0
	for _, r := range res {
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%s\n", r.Name, r.Verdict, r.Took.Round(time.Millisecond), r.Detail)
		if r.Verdict == driver.CheckFail {
			failed++
		}
	}
	_ = tw.Flush()
	if failed > 0 {
		fmt.Fprintf(w, "%d of %d checks failed\n", failed, len(res))
		return ExitViolated
	}
	fmt.Fprintf(w, "every check passed or was skipped\n")
	return ExitOK
}

// driverCheckCases are the checks as JUnit test cases.
func driverCheckCases(lock string, res []driver.CheckResult) []report.TestCase {
	var cs []report.TestCase
	for _, r := range res {
		c := report.TestCase{Scenario: "driver check " + lock, Lock: r.Name, Status: report.CasePassed, TimeS: r.Took.Seconds()}
		switch r.Verdict {
		case driver.CheckFail:
			c.Status, c.Message, c.Detail = report.CaseFailed, r.Detail, r.What
		case driver.CheckSkip:
			c.Status, c.Message = report.CaseSkipped, r.Detail
		}
		cs = append(cs, c)
	}
	return cs
}
