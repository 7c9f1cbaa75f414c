package runner_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// The two views of the servers agree: runs of the catalog's unlock and
// reentrancy scenarios are checked once from the command record and once
// from the keyspace observer alone (Options.NoCommandRecord). Every
// violation the observer found (it reports only where its match by time is
// certain) is found by the record too, with the same culprit and victim at
// the same moment; what only the record found is listed.
func TestCommandRecordAgreesWithObserver(t *testing.T) {
	testenv.Long(t)
	cells := []struct{ scenario, lock string }{
		{"stall-unlock", "get-del"},
		{"stall-unlock", "simple"},
		{"expire-then-unlock", "del-no-owner"},
		{"reentrant-expiry", "reentrant"},
		{"reentrant-expiry", "local-reentrant"},
	}
	recordOnly := 0
	for _, c := range cells {
		s, err := scenarios.Load(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), c.scenario+"-"+c.lock)
		if _, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: c.lock, Setup: runner.Setup{Backend: "process"}, Out: out}); err != nil {
			t.Fatalf("%s/%s: %v", c.scenario, c.lock, err)
		}
		hist := history.FileIn(out)
		rec, err := checker.CheckFile(hist, checker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		obs, err := checker.CheckFile(hist, checker.Options{NoCommandRecord: true})
		if err != nil {
			t.Fatal(err)
		}
		if rec.OwnershipSource != checker.SourceCommandRecord {
			t.Errorf("%s/%s: ownership source %q, want the record", c.scenario, c.lock, rec.OwnershipSource)
		}
		ours := func(r *checker.Result) []checker.Violation {
			var out []checker.Violation
			for _, v := range r.Violations {
				if v.Check == checker.CheckUnlock || v.Check == checker.CheckReentrancy {
					out = append(out, v)
				}
			}
			return out
		}
		rv, ov := ours(rec), ours(obs)
		same := func(a, b checker.Violation) bool {
			return a.Check == b.Check && a.Key == b.Key && fmt.Sprint(a.Clients) == fmt.Sprint(b.Clients) && math.Abs(a.AtMS-b.AtMS) <= 50
		}
		// Only all the evidence can be compared: past MaxViolations a
		// check's list keeps the first 100, which two views may cut apart.
		capped := func(r *checker.Result) bool {
			for _, n := range []string{checker.CheckUnlock, checker.CheckReentrancy} {
				if cr, ok := r.Checks[n]; ok && cr.Violations >= 100 {
					return true
				}
			}
			return false
		}
		if capped(rec) || capped(obs) {
			t.Logf("%s/%s: %d and %d violations kept of more: not compared one by one", c.scenario, c.lock, len(rv), len(ov))
			continue
		}
		for _, o := range ov {
			found := false
			for _, r := range rv {
				found = found || same(o, r)
			}
			if !found {
				t.Errorf("%s/%s: the observer found %s (%s) and the record did not; the record's: %+v", c.scenario, c.lock, o.Detail, o.Check, rv)
			}
		}
		for _, r := range rv {
			found := false
			for _, o := range ov {
				found = found || same(o, r)
			}
			if !found {
				recordOnly++
				t.Logf("%s/%s: only the record found the author: %s", c.scenario, c.lock, r.Detail)
			}
		}
		t.Logf("%s/%s: record %d, observer %d unlock/reentrancy violations", c.scenario, c.lock, len(rv), len(ov))
	}
	t.Logf("%d violations found by the record alone", recordOnly)
}
