package campaign

import (
	"fmt"

	"github.com/lockchaos/lockchaos/runner"
)

func fail(code int, format string, args ...any) error {
	return &runner.Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// badField is bad input about one option (named as in the CLI's flags).
func badField(field string, format string, args ...any) error {
	return &runner.Error{Code: runner.ExitBadInput, Field: field, Err: fmt.Errorf(format, args...)}
}
