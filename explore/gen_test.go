package explore

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
)

func TestGenerateIsDeterministicPerSeed(t *testing.T) {
	g := Generator{Seed: 7, Topology: "single", TTL: 200 * time.Millisecond}
	for i := range 20 {
		a, err := g.Generate(i)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := g.Generate(i)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("schedule %d differs between two draws:\n%s\n%s", i, a.Describe(), b.Describe())
		}
	}
	other := Generator{Seed: 8, Topology: "single", TTL: 200 * time.Millisecond}
	same := 0
	for i := range 20 {
		a, _ := g.Generate(i)
		b, _ := other.Generate(i)
		if reflect.DeepEqual(a, b) {
			same++
		}
	}
	if same > 2 {
		t.Errorf("seeds 7 and 8 drew %d equal schedules of 20", same)
	}
}

func TestGenerateRespectsTopologyAndCapabilities(t *testing.T) {
	for _, tc := range []struct {
		topology string
		info     lockimpl.Info
	}{
		{"single", lockimpl.Info{}},
		{"single", lockimpl.Info{Reentrant: true, Fenced: true}},
		{"independent", lockimpl.Info{MinNodes: 1}},
		{"sentinel", lockimpl.Info{NeedsReplicas: true}},
	} {
		g := Generator{Seed: 1, Topology: tc.topology, TTL: 200 * time.Millisecond, Info: tc.info}
		kinds := Applicable(tc.topology)
		for i := range 300 {
			s, err := g.Generate(i)
			if err != nil {
				t.Fatalf("%s: %v", tc.topology, err)
			}
			if _, err := s.Scenario("x"); err != nil {
				t.Fatalf("%s schedule %d does not validate: %v", tc.topology, i, err)
			}
			if s.Reentry > 0 && !tc.info.Reentrant {
				t.Fatalf("reentry %d for a lock that is not reentrant", s.Reentry)
			}
			if s.Resource == "register" && !tc.info.Fenced {
				t.Fatalf("register resource for an unfenced lock")
			}
			if n := len(s.Faults); n < 1 || n > 3 {
				t.Fatalf("%d faults", n)
			}
			if s.Duration < time.Second || s.Duration > 3*time.Second {
				t.Fatalf("duration %v not in 1–3s", s.Duration)
			}
			for _, f := range s.Faults {
				if !slices.Contains(kinds, f.Spec.Kind) {
					t.Fatalf("%s: kind %s does not run in this topology", tc.topology, f.Spec.Kind)
				}
				if tc.topology == "single" && (f.Spec.Kind == history.FaultFailover || f.Spec.Kind == history.FaultReplicationLag) {
					t.Fatalf("single: %s", f.Spec.Kind)
				}
			}
		}
	}
}

func TestMagnitudesInRange(t *testing.T) {
	g := Generator{Seed: 3, Topology: "single", TTL: 200 * time.Millisecond}
	seen := map[string]bool{}
	for i := range 500 {
		s, _ := g.Generate(i)
		for _, f := range s.Faults {
			seen[f.Spec.Kind] = true
			if f.Spec.Point != "" {
				seen[f.Spec.Kind+"@"+f.Spec.Point] = true
			}
			if d := f.Spec.Params[history.ParamDirection]; d != "" {
				seen[f.Spec.Kind+":"+d] = true
			}
			if f.Spec.When != "" {
				seen["when "+strings.Fields(f.Spec.When)[1]] = true
			}
			switch f.MagField {
			case "":
			case MagRate:
				if f.Mag <= 0 || f.Mag == 1 || f.Mag > 3 {
					t.Fatalf("%s: rate %g", f.Spec.Kind, f.Mag)
				}
			default:
				if m := math.Abs(f.Mag); m < MinMag || m > MaxMag {
					t.Fatalf("%s: magnitude %g×TTL not in [%g, %g]", f.Spec.Kind, f.Mag, MinMag, MaxMag)
				}
			}
		}
	}
	// The whole vocabulary of the topology comes up (but sigterm, for a
	// lock with a process of its own: TestApplicationFaultsFollowTheProcess).
	for _, k := range Applicable("single") {
		if !seen[k] && k != history.FaultSigterm {
			t.Errorf("kind %s never drawn in 500 schedules", k)
		}
	}
	for _, p := range history.Points {
		if !seen["pause-client@"+p] {
			t.Errorf("pause-client at %s never drawn", p)
		}
		if !seen["when "+p] {
			t.Errorf("when %s never drawn", p)
		}
	}
	for _, d := range []string{"both", "to-node", "from-node"} {
		if !seen["link:"+d] || !seen["partition:"+d] {
			t.Errorf("direction %s never drawn for link and partition", d)
		}
	}
}

func TestMarginTemplatesValidate(t *testing.T) {
	for _, topo := range []string{"single", "independent", "sentinel"} {
		for _, tp := range Templates(topo) {
			lo, hi := tp.Range()
			for _, m := range []float64{lo, (lo + hi) / 2, hi} {
				s := MarginSchedule(tp, m, 200*time.Millisecond, topo, 0)
				if _, err := s.Scenario("m"); err != nil {
					t.Errorf("%s %s at %g: %v", topo, tp.Name, m, err)
				}
			}
		}
	}
}

// A renewing lock is held for several renewal cycles (up to 4×TTL) on some
// schedules; a lock that does not renew draws holds of at most 1.2×TTL,
// and the same schedules as before the renewing ladder existed (the same
// number of rungs).
func TestRenewingLocksAreHeldForSeveralCycles(t *testing.T) {
	ttl := 200 * time.Millisecond
	for _, renews := range []bool{false, true} {
		g := Generator{Seed: 3, Topology: "single", TTL: ttl, Info: lockimpl.Info{Renews: renews}}
		var longest time.Duration
		for i := 0; i < 300; i++ {
			s, err := g.Generate(i)
			if err != nil {
				t.Fatal(err)
			}
			longest = max(longest, s.Hold)
		}
		switch {
		case renews && longest < 4*ttl:
			t.Errorf("renewing lock: longest hold %v in 300 schedules, want 4×TTL (%v)", longest, 4*ttl)
		case !renews && longest > ttl*12/10:
			t.Errorf("plain lock: longest hold %v, want at most 1.2×TTL", longest)
		}
	}
}

// fakeNeeds is a driver lock's process as explore sees it: the extensions
// it lists.
type fakeNeeds struct{ ext, apis []string }

func (fakeNeeds) OwnTraffic() bool              { return true }
func (fakeNeeds) ClockPreload() (string, error) { return "", nil }
func (fakeNeeds) BlockLoop() error              { return nil }
func (n fakeNeeds) Cancel() error               { return n.Extension("cancel") }
func (n fakeNeeds) Extension(x string) error {
	if slices.Contains(n.ext, x) {
		return nil
	}
	return fmt.Errorf("no extension %s", x)
}
func (n fakeNeeds) APIModes() []string                           { return n.apis }
func (fakeNeeds) TasksPerProcess(map[string]string) (int, error) { return 1, nil }

// sigterm is drawn for a lock with a process of its own and never for a Go
// lock; throw and cancel for a Go lock, and for a driver only when its
// lock file lists their extensions.
func TestApplicationFaultsFollowTheProcess(t *testing.T) {
	factory := func(lockimpl.Env) (lockimpl.Locker, error) { return nil, errors.New("not started") }
	lockimpl.RegisterProcess(lockimpl.Info{Name: "explore-test-driver-all"}, factory, fakeNeeds{ext: []string{"cancel", "throw", "sigterm"}})
	lockimpl.RegisterProcess(lockimpl.Info{Name: "explore-test-driver-none"}, factory, fakeNeeds{})
	simple, _, _ := lockimpl.Lookup("simple")
	all, _, _ := lockimpl.Lookup("explore-test-driver-all")
	none, _, _ := lockimpl.Lookup("explore-test-driver-none")
	for _, tc := range []struct {
		info lockimpl.Info
		want map[string]bool
	}{
		{simple, map[string]bool{history.FaultCancel: true, history.FaultThrow: true, history.FaultSigterm: false}},
		{all, map[string]bool{history.FaultCancel: true, history.FaultThrow: true, history.FaultSigterm: true}},
		{none, map[string]bool{history.FaultCancel: false, history.FaultThrow: false, history.FaultSigterm: true}},
	} {
		ks := Generator{Topology: "single", Info: tc.info}.kinds()
		for k, want := range tc.want {
			if got := slices.Contains(ks, k); got != want {
				t.Errorf("%s: %s drawn %v, want %v", tc.info.Name, k, got, want)
			}
		}
	}
}

// A driver lock with several idioms is explored in each: its default about
// half the time, its other API modes otherwise; the mode reaches the run as
// lock.extra api, and shrinking tries the default.
func TestAPIModesDrawn(t *testing.T) {
	factory := func(lockimpl.Env) (lockimpl.Locker, error) { return nil, errors.New("not started") }
	lockimpl.RegisterProcess(lockimpl.Info{Name: "explore-test-driver-apis"}, factory, fakeNeeds{apis: []string{"with", "acquire", "try"}})
	info, _, _ := lockimpl.Lookup("explore-test-driver-apis")
	g := Generator{Seed: 5, Topology: "single", Info: info}
	seen := map[string]int{}
	cov := newCoverage()
	for i := range 200 {
		s, err := g.Generate(i)
		if err != nil {
			t.Fatal(err)
		}
		seen[s.API]++
		cov.add(s)
		sc, _ := s.Scenario("x")
		if got := sc.Lock.Extra["api"]; got != s.API {
			t.Fatalf("schedule api %q, scenario lock.extra api %q", s.API, got)
		}
		if s.API != "" && !slices.ContainsFunc(reductions(s), func(r reduction) bool { return r.s.API == "" }) {
			t.Fatalf("no reduction tries the default api of %+v", s)
		}
	}
	if seen[""] < 60 || seen["acquire"] < 30 || seen["try"] < 30 || seen["with"] != 0 {
		t.Errorf("api modes drawn %v: want the default (\"\") about half the time, each other mode the rest", seen)
	}
	// The report's coverage counts them, the default by that name.
	if cov.apis["default"] != seen[""] || cov.apis["acquire"] != seen["acquire"] || cov.apis["try"] != seen["try"] || !g.hasAPIs() {
		t.Errorf("coverage of api modes %v, drawn %v", cov.apis, seen)
	}
	simple, _, _ := lockimpl.Lookup("simple")
	if (Generator{Info: simple}).hasAPIs() {
		t.Error("a Go lock has api modes")
	}
	for i := range 50 {
		if s, _ := (Generator{Seed: 5, Topology: "single", Info: simple}).Generate(i); s.API != "" {
			t.Fatalf("a Go lock drew api %q", s.API)
		}
	}
}

// A driver lock explores two runs a core by default (its runs wait on its
// processes), a lock in the harness's process two; shrinking takes two
// seeds a step either way.
func TestAutoParallelByWhereTheLockRuns(t *testing.T) {
	factory := func(lockimpl.Env) (lockimpl.Locker, error) { return nil, nil }
	lockimpl.RegisterProcess(lockimpl.Info{Name: "explore-test-driver-parallel"}, factory, fakeNeeds{})
	if got, want := AutoParallel("explore-test-driver-parallel"), max(2, 2*runtime.NumCPU()); got != want {
		t.Errorf("a driver lock: %d runs at once, want %d", got, want)
	}
	if got := AutoParallel("simple"); got != 2 {
		t.Errorf("simple: %d runs at once, want 2", got)
	}
}

// A driver lock with the tasks extension is explored with several clients
// a process in some schedules (2 or 4, never with a fault on a client's
// process, which the runner refuses for them); the number reaches the run
// as lock.extra tasks, and shrinking tries a process a client. A lock
// without the extension is never drawn so.
func TestTasksDrawn(t *testing.T) {
	factory := func(lockimpl.Env) (lockimpl.Locker, error) { return nil, errors.New("not started") }
	lockimpl.RegisterProcess(lockimpl.Info{Name: "explore-test-driver-tasks"}, factory, fakeNeeds{ext: []string{"cancel", "throw", "sigterm", "tasks"}})
	lockimpl.RegisterProcess(lockimpl.Info{Name: "explore-test-driver-one"}, factory, fakeNeeds{ext: []string{"cancel", "throw", "sigterm"}})
	tasks, _, _ := lockimpl.Lookup("explore-test-driver-tasks")
	one, _, _ := lockimpl.Lookup("explore-test-driver-one")
	seen := map[int]int{}
	cov := newCoverage()
	g := Generator{Seed: 5, Topology: "single", Info: tasks}
	for i := range 200 {
		s, err := g.Generate(i)
		if err != nil {
			t.Fatal(err)
		}
		seen[s.Tasks]++
		cov.add(s)
		sc, _ := s.Scenario("x")
		want := ""
		if s.Tasks > 1 {
			want = strconv.Itoa(s.Tasks)
			for _, f := range s.Faults {
				if slices.Contains(history.ClientProcessKinds, f.Spec.Kind) {
					t.Errorf("schedule %d: %d clients a process with %s, a fault on a client's process", i, s.Tasks, f.Spec.Kind)
				}
			}
			if !slices.ContainsFunc(reductions(s), func(r reduction) bool { return r.s.Tasks == 0 }) {
				t.Errorf("schedule %d: shrinking never tries a process a client", i)
			}
		}
		if got := sc.Lock.Extra["tasks"]; got != want {
			t.Errorf("schedule %d: lock.extra tasks %q, want %q", i, got, want)
		}
	}
	if seen[2] < 10 || seen[4] < 10 || seen[0] < 100 {
		t.Errorf("tasks drawn %v in 200 schedules: want 2 and 4 in some, a process a client in most", seen)
	}
	if cov.tasks["1"] != seen[0] || cov.tasks["4"] != seen[4] {
		t.Errorf("coverage %v, drawn %v", cov.tasks, seen)
	}
	g.Info = one
	for i := range 100 {
		if s, _ := g.Generate(i); s.Tasks != 0 {
			t.Fatalf("a lock without the tasks extension drawn with %d clients a process", s.Tasks)
		}
	}
}
