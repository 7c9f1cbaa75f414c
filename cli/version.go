package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newVersionCmd) }

// buildInfo is what `lockchaos version` prints: the build a CI log should
// name at its top.
type buildInfo struct {
	Module   string // module path
	Version  string // module version: a tag, a pseudo-version, or (devel)
	Revision string // VCS revision, "" when not stamped (go run, -buildvcs=false)
	Dirty    bool   // built from a modified tree
	Time     string // commit time (RFC 3339), "" when not stamped
	Go       string // Go version and platform
}

// readBuildInfo reads the running binary's build information.
func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildInfoOf(bi, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
}

// buildInfoOf picks the fields out of bi (nil: a binary without build
// information); goVersion is the running Go's.
func buildInfoOf(bi *debug.BuildInfo, goVersion string) buildInfo {
	out := buildInfo{Module: "github.com/lockchaos/lockchaos", Version: "(unknown)", Go: goVersion}
	if bi == nil {
		return out
	}
	if bi.Main.Path != "" {
		out.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		out.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			out.Revision = s.Value
		case "vcs.modified":
			out.Dirty = s.Value == "true"
		case "vcs.time":
			out.Time = s.Value
		}
	}
	return out
}

// revision is the VCS revision with "+dirty" for a modified tree, or
// "unknown" when the build was not stamped.
func (b buildInfo) revision() string {
	switch {
	case b.Revision == "":
		return "unknown (not stamped: go run, or built with -buildvcs=false or outside the repository)"
	case b.Dirty:
		return b.Revision + "+dirty"
	}
	return b.Revision
}

// short is the one line --version prints.
func (b buildInfo) short() string {
	return fmt.Sprintf("lockchaos %s (revision %s, %s)", b.Version, b.revision(), b.Go)
}

// write prints every field, one a line.
func (b buildInfo) write(w io.Writer) {
	fmt.Fprintf(w, "lockchaos %s\nmodule:   %s\nrevision: %s\n", b.Version, b.Module, b.revision())
	if b.Time != "" {
		fmt.Fprintf(w, "committed: %s\n", b.Time)
	}
	fmt.Fprintf(w, "go:       %s\n", b.Go)
}

func newVersionCmd(stdout, _ io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version, the VCS revision and the Go version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			readBuildInfo().write(stdout)
			return nil
		},
	}
}
