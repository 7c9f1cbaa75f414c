package campaign

import (
	"fmt"

	"github.com/lockchaos/lockchaos/runner"
)

func fail(c runner.Class, format string, args ...any) error {
	return &runner.Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// badField is bad input about one option (named as in the CLI's flags).
func badField(field string, format string, args ...any) error {
	return &runner.Error{Class: runner.BadInput, Field: field, Err: fmt.Errorf(format, args...)}
}
