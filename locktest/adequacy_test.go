package locktest

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// The -short subset is mutation adequate: for each kind, every broken
// control of the kind fails it (a scenario of the subset fails), and every
// correct lock of the kind passes it (correct built-ins, the correct
// control watch-unlock, and two renewing locks written outside the project:
// newRenewer, whose release stall-unlock freezes past its TTL, and
// newLateRenewer, which renews at 0.8×TTL). Adapters of
// third-party libraries are not the project's to vouch for and are left
// out. A broken control must fail one of two passes (a pause can miss its
// moment on a loaded machine; the log says when it took two). It runs
// every lock's subset (about five minutes): not under -short.
func TestShortIsMutationAdequate(t *testing.T) {
	testenv.Long(t)
	if testing.Short() {
		t.Skip("runs the -short subset of every built-in lock (a few minutes)")
	}
	if raceDetector {
		// Under -race every client runs several times slower: the timing
		// scenarios would judge another machine than a lock author's
		// pre-commit hook. scripts/test.sh runs the long tier without -race.
		t.Skip("judges the -short subset's timing, which -race changes; run without -race (scripts/test.sh's long tier does)")
	}
	for name, f := range map[string]lockimpl.Factory{"test-renewer": newRenewer, "test-late-renewer": newLateRenewer} {
		if _, err := register(name, f, lockimpl.Info{Renews: true}); err != nil {
			t.Fatal(err)
		}
	}
	c := config{backend: cluster.Auto, quick: true}
	kinds := map[string][]lockimpl.Info{}
	for _, info := range lockimpl.List() {
		if info.Kind == lockimpl.Adapter || info.Kind == lockimpl.User && info.Name != "test-renewer" && info.Name != "test-late-renewer" {
			continue
		}
		ref := ReferenceFor(info)
		kinds[ref] = append(kinds[ref], info)
	}
	// Two locks' subsets at a time (a lock author runs one; CI's machine
	// has two cores, and a subset's runs mostly wait out holds and pauses):
	// half the wall time. A correct lock flagged here because of the other
	// would be a finding against locktest's own margins, not a reason to
	// run them one by one.
	slots := make(chan struct{}, 2)
	for ref, locks := range kinds {
		refInfo, _, err := lockimpl.Lookup(ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range locks {
			t.Run(ref+"/"+info.Name, func(t *testing.T) {
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()
				began := time.Now()
				steps, err := plan(info, refInfo, c)
				if err != nil {
					t.Fatal(err)
				}
				broken := info.Kind == lockimpl.Broken
				subset := func() (ran, failed []string) {
					for _, st := range steps {
						if st.skip != "" {
							continue
						}
						v := judge(c, info.Name, info, ref, st.s, t.TempDir)
						for _, l := range v.logs {
							if strings.Contains(l, "running it again") {
								t.Log(l)
							}
						}
						if v.skip != "" {
							t.Logf("%s skipped: %s", st.s.Name, v.skip)
							continue
						}
						ran = append(ran, st.s.Name)
						if v.fail != "" {
							failed = append(failed, st.s.Name)
							if !broken {
								t.Errorf("correct lock %s fails the -short subset:\n%s", info.Name, v.fail)
							}
							// A lock author's go test -short fails at the
							// first failing scenario as surely as at the
							// last: a broken control is caught once one
							// fails, and its remaining steps would only
							// cost time (about half of this test's).
							if broken {
								break
							}
						}
					}
					return ran, failed
				}
				ran, failed := subset()
				if broken && len(failed) == 0 {
					// The faults are timing experiments on a shared machine:
					// a pause can miss its moment. A control the subset
					// catches fails one of two passes; said when it took two.
					t.Logf("broken control %s passed the first pass of its -short subset (%s); a second pass", info.Name, strings.Join(ran, ", "))
					ran, failed = subset()
				}
				if !broken {
					if v := probe(c, info.Name, info, t.TempDir); v.fail != "" {
						t.Errorf("correct lock %s fails the capabilities check:\n%s", info.Name, v.fail)
					}
				}
				if len(ran) == 0 {
					t.Fatalf("%s: no scenario of the -short subset ran", info.Name)
				}
				if broken && len(failed) == 0 {
					t.Errorf("broken control %s (%s) passes the -short subset of its kind (%s): %s", info.Name, info.Mistake, ref, strings.Join(ran, ", "))
				}
				t.Logf("%s (%s, kind %s): -short ran %s in %v; failed: %v", info.Name, info.Kind, ref, strings.Join(ran, ", "), time.Since(began).Round(100*time.Millisecond), failed)
			})
		}
	}
}
