package cli

import (
	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/lockimpl/driver"
)

// warmFlag is --cold-drivers of the commands that run many runs (explore,
// matrix, card): by default a driver process that declares the reset
// extension, and that no fault touched, serves the next run of the same
// lock and options, re-initialised (lockimpl/driver/pool.go).
type warmFlag struct{ cold bool }

func (w *warmFlag) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.cold, "cold-drivers", false,
		"start a driver lock's processes afresh for every run (default: a process whose driver declares the reset extension, untouched by any fault, serves the next run of the same lock, re-initialised; docs/driver-protocol.md)")
}

// start turns reuse on unless --cold-drivers; the function it returns
// stops every process kept.
func (w *warmFlag) start() func() {
	if w.cold {
		return func() {}
	}
	driver.Reuse(true)
	return func() { driver.Reuse(false) }
}
