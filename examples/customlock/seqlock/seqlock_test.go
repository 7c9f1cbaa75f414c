package seqlock_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/locktest"

	_ "example.com/customlock/seqlock" // registers seq-lock
)

// The conformance suite: every catalog scenario that applies to a plain lock
// (go test -short for the fast subset, -run 'TestSeqLock/gc-pause' for one).
func TestSeqLock(t *testing.T) {
	locktest.Run(t, "seq-lock", nil)
}
