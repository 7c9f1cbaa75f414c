package renewlock_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/locktest"

	_ "example.com/customlock/renewlock" // registers renew-lock
)

// The conformance suite for a renewing lock: the scenarios that apply to
// it, held to the watchdog's bar (go test -short for the fast subset).
func TestRenewLock(t *testing.T) {
	locktest.Run(t, "renew-lock", nil)
}
