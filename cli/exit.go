package cli

import (
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/runner"
)

// Exit codes (README "Exit codes"): the process's, decided here from how
// the run, the check or the campaign came out (runner.Class) or from the
// command's own checks of its flags.
const (
	ExitOK       = 0 // as expected
	ExitViolated = 1 // violation (or a failed threshold)
	ExitUnknown  = 2 // inconclusive
	ExitBadInput = 3
	ExitInfra    = 4
)

// ExitCode is the exit code of a class of outcome.
func ExitCode(c runner.Class) int {
	switch c {
	case runner.Passed:
		return ExitOK
	case runner.Violated:
		return ExitViolated
	case runner.Unknown:
		return ExitUnknown
	case runner.BadInput:
		return ExitBadInput
	}
	return ExitInfra
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
