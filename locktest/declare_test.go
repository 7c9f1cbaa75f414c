package locktest

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/scenarios"
)

// The capabilities check holds a lock's declarations to what it does: a
// renewing lock registered without Renews, and a reentrant one registered
// without Reentrant, fail with a message that says what to declare; the
// same locks declared right pass.
func TestCapabilitiesCheck(t *testing.T) {
	// The built-in reentrant lock behind a struct that keeps only the
	// Locker methods: a user's reentrant lock without the Reentrant()
	// method lockimpl.New checks.
	reentrant := func(env lockimpl.Env) (lockimpl.Locker, error) {
		l, err := lockimpl.New("reentrant", env)
		return struct{ lockimpl.Locker }{l}, err
	}
	for _, tc := range []struct {
		name    string
		factory lockimpl.Factory
		info    lockimpl.Info
		want    string // in the failure; "" passes
	}{
		{"test-renewer-undeclared", newRenewer, lockimpl.Info{}, "reported renewals through Env.Note but does not declare Renews ("},
		{"test-renewer-declared", newRenewer, lockimpl.Info{Renews: true}, ""},
		// Renewing at 0.8×TTL (redis-semaphore's schedule) is seen: the
		// probe holds longer than one TTL.
		{"test-late-renewer-declared", newLateRenewer, lockimpl.Info{Renews: true}, ""},
		{"test-late-renewer-undeclared", newLateRenewer, lockimpl.Info{}, "reported renewals through Env.Note but does not declare Renews ("},
		{"test-reentrant-undeclared", reentrant, lockimpl.Info{}, "re-entered a key it holds (a second TryAcquire by the same handle returned a lease of depth 2) but does not declare Reentrant: declare Reentrant"},
		{"test-reentrant-declared", reentrant, lockimpl.Info{Reentrant: true}, ""},
		{"test-plain-says-reentrant", newRenewer, lockimpl.Info{Reentrant: true, Renews: true}, "declares Reentrant but a second TryAcquire"},
	} {
		info, err := register(tc.name, tc.factory, tc.info)
		if err != nil {
			t.Fatal(err)
		}
		// Each probe holds its key for longer than a TTL on a server of its
		// own: side by side.
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := probe(config{backend: cluster.Auto}, tc.name, info, t.TempDir)
			switch {
			case tc.want == "" && v.fail != "":
				t.Errorf("%s: %s", tc.name, v.fail)
			case tc.want != "" && !strings.Contains(v.fail, tc.want):
				t.Errorf("%s: failure %q, want it to say %q", tc.name, v.fail, tc.want)
			case tc.want != "" && strings.Contains(tc.want, "Renews") && !strings.Contains(v.fail, "declare Renews in its lockimpl.Info"):
				t.Errorf("%s: failure %q does not tell the author to declare Renews", tc.name, v.fail)
			}
		})
	}
}

// A correct renewing lock whose release stall-unlock freezes past its TTL
// passes: a hold ends when its release is called (workloads.Notes), so the
// frozen release is no holding time in which it should have renewed. With
// the hold measured to the release's end it failed as a silent renewer
// ("although a hold lasted 421ms").
func TestFrozenReleaseOfARenewingLockPasses(t *testing.T) {
	info, err := register("test-renewer-frozen", newRenewer, lockimpl.Info{Renews: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Builtin("stall-unlock")
	if err != nil {
		t.Fatal(err)
	}
	refInfo, _, _ := lockimpl.Lookup(ReferenceFor(info))
	if ok, why := Applies(info, refInfo, s); !ok {
		t.Fatalf("stall-unlock does not apply to a renewing lock: %s", why)
	}
	v := judge(config{backend: cluster.Auto}, info.Name, info, ReferenceFor(info), s, t.TempDir)
	if v.fail != "" || v.skip != "" {
		t.Fatalf("the renewing lock fails stall-unlock: %s%s", v.fail, v.skip)
	}
	for _, l := range v.logs {
		t.Log(l)
	}
}

// The plan holds the pause-point sweep for every kind the sweep lists (it
// runs in full, not in -short) and says why it is left out for a lock that
// needs replicas.
func TestPlanHasTheSweep(t *testing.T) {
	for _, tc := range []struct {
		info lockimpl.Info
		runs bool
	}{{lockimpl.Info{}, true}, {lockimpl.Info{Renews: true}, true}, {lockimpl.Info{MinNodes: 1}, true}, {lockimpl.Info{NeedsReplicas: true}, false}} {
		ref, _, _ := lockimpl.Lookup(ReferenceFor(tc.info))
		for _, quick := range []bool{false, true} {
			steps, err := plan(tc.info, ref, config{quick: quick})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, st := range steps {
				if !strings.HasPrefix(st.s.Name, "sweep-pause-") {
					continue
				}
				n++
				if runs := st.skip == ""; runs != (tc.runs && !quick) {
					t.Errorf("%s (quick %v): %s runs %v (%s)", tc.info.Capabilities(), quick, st.s.Name, runs, st.skip)
				}
			}
			if n != 6 {
				t.Errorf("%s: %d sweep scenarios in the plan, want 6", tc.info.Capabilities(), n)
			}
		}
	}
}

// A renewing lock written as an author outside the project would survives
// the sweep of its kind: frozen at every point of its cycle, renewals
// included, for 0.5×, 1.5× and 3× the TTL (about 25 s).
func TestRenewerSurvivesTheSweep(t *testing.T) {
	testenv.Long(t)
	info, err := register("test-renewer-sweep", newRenewer, lockimpl.Info{Renews: true})
	if err != nil {
		t.Fatal(err)
	}
	sweep, err := scenarios.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sweep {
		v := judge(config{backend: cluster.Auto}, info.Name, info, ReferenceFor(info), s, t.TempDir)
		if v.fail != "" || v.skip != "" {
			t.Errorf("%s%s", v.fail, v.skip)
		}
	}
}
