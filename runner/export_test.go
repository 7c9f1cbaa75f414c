package runner

import "time"

// ExpectationForInfo is expectationFor for tests: the expectation of a
// lock that need not be registered.
var ExpectationForInfo = expectationFor

// SetAbandonAfter shortens how long a run waits for clients that do not
// return after their cancellation; it returns the restore.
func SetAbandonAfter(d time.Duration) func() {
	old := abandonAfter
	abandonAfter = d
	return func() { abandonAfter = old }
}
