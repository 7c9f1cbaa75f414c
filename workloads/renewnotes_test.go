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

// A lock that reports renewals without declaring Renews is flagged with a
// note that tells its author to declare it; one that reports only losses,
// or declares Renews, is not.
func TestUndeclaredRenewalsFlag(t *testing.T) {
	o := lockimpl.Options{TTL: 300 * time.Millisecond}.WithDefaults()
	for _, tc := range []struct {
		name    string
		renews  bool
		renew   int64
		flagged bool
	}{
		{"renews undeclared", false, 2, true},
		{"no renewal reported", false, 0, false},
		{"declared", true, 2, false},
	} {
		w := &Workload{lockInfo: lockimpl.Info{Name: "x", Renews: tc.renews}, lockOpts: o}
		w.lockNotes.Store(tc.renew + 1) // one loss note besides
		w.renewNotes.Store(tc.renew)
		w.sawHold(int64(time.Second))
		notes := w.Notes()
		got := len(notes) == 1 && strings.Contains(notes[0], UndeclaredRenewals) && strings.Contains(notes[0], "declare Renews")
		if got != tc.flagged {
			t.Errorf("%s: notes %q, flagged %v, want %v", tc.name, notes, got, tc.flagged)
		}
	}
}
