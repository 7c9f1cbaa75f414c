package reentrantlock_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/locktest"

	_ "example.com/customlock/reentrantlock" // registers reentrant-lock
)

// The conformance suite for a reentrant lock: the scenarios that apply to
// it (re-entry among them), held to the built-in reentrant lock's bar.
func TestReentrantLock(t *testing.T) {
	locktest.Run(t, "reentrant-lock", nil)
}
