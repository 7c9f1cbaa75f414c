package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/history"
)

func newExportCmd(stdout io.Writer) *cobra.Command {
	var jsonl, compact bool
	var out string
	cmd := &cobra.Command{
		Use:   "export DIR",
		Short: "Write a run's history in the readable JSONL form (or the compact one)",
		Long: `Export reads DIR's history (history.lch, the compact form runs write, or
history.jsonl) and writes it again: --jsonl (the default) as one JSON object per
line, for jq and other tools; --compact as history.lch. The output goes to
--out, or next to the input (DIR/history.jsonl, DIR/history.lch); an existing
file is never overwritten.`,
		Example: `  lockchaos export runs/contention --jsonl
  lockchaos export runs/contention --out - | jq 'select(.op == "fault")'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if jsonl && compact {
				return exitWith(ExitBadInput, fmt.Errorf("--jsonl and --compact: give one of them"))
			}
			in := history.FileIn(args[0])
			if out == "" {
				out = filepath.Join(args[0], history.JSONLFile)
				if compact {
					out = filepath.Join(args[0], history.CompactFile)
				}
			}
			n, err := exportHistory(in, out, compact, stdout)
			if err != nil {
				return exitWith(ExitBadInput, err)
			}
			if out != "-" {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d events: %s → %s\n", n, in, out)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonl, "jsonl", false, "write JSONL, one event per line (default)")
	cmd.Flags().BoolVar(&compact, "compact", false, "write the compact form (history.lch)")
	cmd.Flags().StringVarP(&out, "out", "o", "", `output file ("-": standard output, JSONL only)`)
	return cmd
}

// exportHistory copies every event of in to out in the chosen form.
func exportHistory(in, out string, compact bool, stdout io.Writer) (int, error) {
	if out == "-" {
		if compact {
			return 0, fmt.Errorf("--out -: the compact form is binary; write it to a file")
		}
		n := 0
		var buf []byte
		_, err := history.ScanFile(in, func(e *history.Event) error {
			buf = append(history.AppendJSON(buf[:0], e), '\n')
			n++
			_, err := stdout.Write(buf)
			return err
		})
		return n, err
	}
	if _, err := os.Stat(out); err == nil {
		return 0, fmt.Errorf("--out %s: exists (export never overwrites)", out)
	}
	if compact != (filepath.Ext(out) == history.CompactExt) {
		return 0, fmt.Errorf("--out %s: the compact form's file name ends in %s, the JSONL form's does not", out, history.CompactExt)
	}
	w, err := history.Create(out)
	if err != nil {
		return 0, err
	}
	n := 0
	_, err = history.ScanFile(in, func(e *history.Event) error {
		w.Append(e)
		n++
		return nil
	})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
	}
	return n, err
}
