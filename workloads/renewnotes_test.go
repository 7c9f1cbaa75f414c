package workloads

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// A lock that declares Renews and reports no renewal note is flagged once a
// hold outlasted two renewal intervals plus a command timeout; not before,
// not when it reported notes, not when it does not renew.
func TestRenewalNotesFlag(t *testing.T) {
	o := lockimpl.Options{TTL: 300 * time.Millisecond}.WithDefaults() // renew every 100ms, command timeout 150ms
	for _, tc := range []struct {
		name    string
		renews  bool
		hold    time.Duration
		notes   int64
		flagged bool
	}{
		{"long hold, silent", true, 400 * time.Millisecond, 0, true},
		{"short holds", true, 300 * time.Millisecond, 0, false},
		{"reported", true, time.Second, 3, false},
		{"does not renew", false, time.Second, 0, false},
	} {
		w := &Workload{lockInfo: lockimpl.Info{Name: "x", Renews: tc.renews}, lockOpts: o}
		w.sawHold(int64(tc.hold / 2))
		w.sawHold(int64(tc.hold))
		w.lockNotes.Store(tc.notes)
		notes := w.Notes()
		if got := len(notes) == 1 && strings.Contains(notes[0], SilentRenewals); got != tc.flagged {
			t.Errorf("%s: notes %q, flagged %v, want %v", tc.name, notes, got, tc.flagged)
		}
	}
}
