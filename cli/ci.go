package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/report"
)

// CI outputs of run and matrix (docs/ci.md): a JUnit XML file and the
// GitHub Actions step summary.

// StepSummaryEnv names the file GitHub Actions shows as the step's summary;
// run and matrix append their Markdown to it when it is set.
const StepSummaryEnv = "GITHUB_STEP_SUMMARY"

// ciFlags are the CI output flags of run and matrix.
type ciFlags struct {
	junit string
}

func (f *ciFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.junit, "junit", "", "also write the outcome as JUnit XML to this file (one test case per scenario × lock × seed; docs/ci.md)")
}

// check fails early, naming --junit, when the file's directory cannot be
// made: a CI job learns before the run, not after it.
func (f *ciFlags) check() error {
	if f.junit == "" {
		return nil
	}
	if fi, err := os.Stat(f.junit); err == nil && fi.IsDir() {
		return exitWith(ExitBadInput, fmt.Errorf("--junit %s: is a directory", f.junit))
	}
	if err := os.MkdirAll(filepath.Dir(f.junit), 0o755); err != nil {
		return exitWith(ExitBadInput, fmt.Errorf("--junit %s: %w", f.junit, err))
	}
	return nil
}

// write writes the JUnit file (when asked for) and appends md to the step
// summary (when GITHUB_STEP_SUMMARY is set). A failure is told on stderr
// and turns exit code 0 into 4 (the CI job must not pass without its
// report); a run that already failed keeps its own exit code.
func (f *ciFlags) write(stderr io.Writer, suite string, cases []report.TestCase, md string, code int) int {
	failed := false
	if f.junit != "" {
		props := map[string]string{"lockchaos.version": readBuildInfo().short()}
		if err := report.WriteJUnitFile(f.junit, suite, props, cases); err != nil {
			fmt.Fprintf(stderr, "lockchaos: --junit: %v\n", err)
			failed = true
		}
	}
	if err := appendStepSummary(md); err != nil {
		fmt.Fprintf(stderr, "lockchaos: %s: %v\n", StepSummaryEnv, err)
		failed = true
	}
	if failed && code == 0 {
		return ExitInfra
	}
	return code
}

// appendStepSummary appends md to the file $GITHUB_STEP_SUMMARY names
// (GitHub shows it on the job's page); nothing when it is unset.
func appendStepSummary(md string) error {
	path := os.Getenv(StepSummaryEnv)
	if path == "" || md == "" {
		return nil
	}
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("append the step summary: %w", err)
	}
	if _, err := io.WriteString(fh, md+"\n"); err != nil {
		fh.Close()
		return fmt.Errorf("append the step summary to %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("append the step summary to %s: %w", path, err)
	}
	return nil
}

// runMarkdown is a run's summary.md, or a line saying why there is none.
func runMarkdown(scenario, lock, dir string, err error) string {
	if b, rerr := os.ReadFile(filepath.Join(dir, "summary.md")); rerr == nil && dir != "" {
		return string(b)
	}
	why := "no summary.md"
	if err != nil {
		why = err.Error()
	}
	return fmt.Sprintf("## lockchaos: %s / %s\n\n**[ERROR]** %s\n", scenario, lock, why)
}
