package cli

import (
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/runner"
)

// Exit codes (README "Exit codes"): the process's, decided from how the
// run, the check or the campaign came out (runner.Class) or from the
// command's own checks of its flags. A class is its exit code: the run's
// documents (results.json, seeds.json, matrix.json), which campaign and
// runner write without cli, record int(class) as exit_code, so the CLI
// exits with that same number rather than mapping it anew.
const (
	ExitOK       = int(runner.Passed)   // as expected
	ExitViolated = int(runner.Violated) // violation (or a failed threshold)
	ExitUnknown  = int(runner.Unknown)  // inconclusive
	ExitBadInput = int(runner.BadInput)
	ExitInfra    = int(runner.Infra)
)

// ExitCode is the exit code of a class of outcome: the class itself, and
// an infrastructure failure for a value outside the classes.
func ExitCode(c runner.Class) int {
	if c < runner.Passed || c > runner.Infra {
		return ExitInfra
	}
	return int(c)
}

// ExitCodeOf is the exit code an error maps to: a command's own
// (exitWith), else its class's (runner.ClassOf; 0 for nil).
func ExitCodeOf(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitCode(runner.ClassOf(err))
}

// exitError ends a command with an exit code and, unless err is nil, a
// message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith ends a command with exit code code and, unless err is nil, a
// message.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// badFlag is bad input about one flag, named as the user typed it.
func badFlag(flag, format string, args ...any) error {
	return exitWith(ExitBadInput, fmt.Errorf("--%s: %w", flag, fmt.Errorf(format, args...)))
}
