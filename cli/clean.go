package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/cluster"
)

func newCleanCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "clean",
		Short: "Remove the containers of lockchaos runs that were killed before they could",
		Long: `Clean removes docker containers that lockchaos started (they carry its labels)
whose harness process is gone: a run killed with SIGKILL cannot stop its
containers. Containers of runs still going, or started from another host, are
left alone. Every command that starts containers does this first; clean does
it on demand. (The process backend's servers die with their harness.)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			removed, err := cluster.ReapOrphans(cmd.Context())
			for _, r := range removed {
				fmt.Fprintf(stdout, "removed %s\n", r)
			}
			if err != nil {
				fmt.Fprintf(stdout, "nothing cleaned: %v\n", err)
				return nil
			}
			if len(removed) == 0 {
				fmt.Fprintln(stdout, "no orphaned containers")
			}
			return nil
		},
	}
}
