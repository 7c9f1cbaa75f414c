package scenarios_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/workloads"
)

// Every built-in scenario parses, validates and states an expectation.
func TestCatalogParses(t *testing.T) {
	all, err := scenarios.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 17 {
		t.Fatalf("catalog has %d scenarios, want every one of SCENARIOS.md (17)", len(all))
	}
	for _, s := range all {
		if s.Expect == nil {
			t.Errorf("%s: no expect block", s.Name)
		}
		// A failover takes seconds, a container's restart about 450ms: a
		// lock must outlive them to be lost in them. Other scenarios keep
		// TTLs short, so runs stay short.
		restarts := false
		for _, f := range s.Faults {
			restarts = restarts || f.Kind == "restart-node"
		}
		if s.Lock.WithDefaults().TTL > 500*time.Millisecond && s.Topology != "sentinel" && s.Topology != "cluster" && !restarts {
			t.Errorf("%s: ttl %v above 500ms", s.Name, s.Lock.TTL)
		}
		if s.Duration > 10*time.Second {
			t.Errorf("%s: duration %v too long for CI", s.Name, s.Duration)
		}
	}
}

// Bad input names the field and the value.
func TestValidationNamesFieldAndValue(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown field", "name: x\nworkload:\n  clientz: 3\n", "clientz"},
		{"bad topology", "topology: ring\n", `topology: "ring"`},
		{"bad clients", "workload:\n  clients: -2\n", "workload.clients: -2"},
		{"bad hold", "workload:\n  hold: soon\n", "workload.hold: cannot unmarshal !!str `soon`"},
		{"bad resource", "workload:\n  resource: queue\n", `workload.resource: "queue"`},
		{"bad fault kind", "faults:\n  - kind: meteor\n", `faults[0].kind: "meteor"`},
		{"bad fault target", "faults:\n  - kind: pause-client\n    duration: 1s\n    target: everybody\n", `"everybody"`},
		{"pause without duration", "faults:\n  - kind: pause-client\n", "duration"},
		{"bad fault trigger", "faults:\n  - kind: restart-node\n    when: client:0 soon\n", `faults[0].when: "client:0 soon": the point must be`},
		{"bad expect verdict", "expect:\n  simple: {mutex: maybe}\n", `expect.simple.mutex: "maybe"`},
		{"bad expect check", "expect:\n  simple: {speed: valid}\n", "speed"},
		{"bad expect lock", "expect:\n  nolock: {mutex: valid}\n", "nolock"},
		{"bad ttl", "lock:\n  ttl: 10us\n", "ttl"},
		{"bad duration type", "duration: fast\n", "duration: cannot unmarshal !!str `fast`"},
		{"bad nested duration type", "workload: {clients: 2}\nfaults:\n  - {kind: pause-client, at: soonish, duration: 1s}\n", "faults[0].at: cannot unmarshal !!str `soonish`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenarios.Parse([]byte(c.yaml), "test.yaml")
			if err == nil {
				t.Fatalf("no error for %q", c.yaml)
			}
			if !errors.Is(err, scenarios.ErrBadInput) {
				t.Errorf("error %v is not ErrBadInput", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	checks := map[string]string{"mutex": "invalid", "resource": "valid", "liveness": "valid"}
	if ok, _ := scenarios.Matches(map[string]string{"mutex": "invalid"}, checks); !ok {
		t.Error("listed check matched, others valid: should match")
	}
	if ok, bad := scenarios.Matches(nil, checks); ok || len(bad) != 1 || !strings.HasPrefix(bad[0], "mutex") {
		t.Errorf("nil expectation must require every check valid; got %v %v", ok, bad)
	}
	if ok, _ := scenarios.Matches(map[string]string{"*": "any"}, checks); !ok {
		t.Error(`"*": any must match anything`)
	}
	if ok, _ := scenarios.Matches(map[string]string{"mutex": "any", "*": "invalid"}, map[string]string{"mutex": "valid", "resource": "valid"}); ok {
		t.Error(`"*": invalid must require the others invalid`)
	}
}

func TestParseRange(t *testing.T) {
	r, err := workloads.ParseRange("5ms-15ms")
	if err != nil || r.Min != 5*time.Millisecond || r.Max != 15*time.Millisecond {
		t.Fatalf("got %v %v", r, err)
	}
	if _, err := workloads.ParseRange("15ms-5ms"); err == nil {
		t.Error("min > max accepted")
	}
}

// A scenario names where a backend gives other verdicts and why; on that
// backend the locks it lists are judged by those, the others as before; a
// backend entry without a reason, or naming no backend, is refused.
func TestBackendExpectations(t *testing.T) {
	base := "name: b\nduration: 1s\nexpect:\n  default: {mutex: invalid}\n  simple: {mutex: invalid, resource: invalid}\n"
	s, err := scenarios.Parse([]byte(base+"backends:\n  docker:\n    why: a container restart is slower\n    expect:\n      simple: {mutex: invalid, resource: any}\n"), "b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Expectation("simple")["resource"]; got != "invalid" {
		t.Errorf("process: simple resource %q, want invalid", got)
	}
	if s.ForBackend("process") != s {
		t.Error("a backend the scenario does not name changed it")
	}
	d := s.ForBackend("docker")
	if got := d.Expectation("simple")["resource"]; got != "any" {
		t.Errorf("docker: simple resource %q, want any", got)
	}
	if got := d.Expectation("reentrant")["mutex"]; got != "invalid" {
		t.Errorf("docker: reentrant (default) mutex %q, want invalid", got)
	}
	if !strings.Contains(d.BackendNote, "a container restart is slower") || s.Expectation("simple")["resource"] != "invalid" {
		t.Errorf("note %q; the original changed: %v", d.BackendNote, s.Expectation("simple"))
	}
	for yaml, want := range map[string]string{
		"backends:\n  podman:\n    why: x\n    expect:\n      simple: {mutex: invalid}\n": `backends.podman: "podman" is not a backend`,
		"backends:\n  docker:\n    expect:\n      simple: {mutex: invalid}\n":             "backends.docker.why: missing",
		"backends:\n  docker:\n    why: x\n":                                              "backends.docker.expect: missing",
		"backends:\n  docker:\n    why: x\n    expect:\n      simple: {mutex: wrong}\n":   "backends.docker.expect.simple.mutex",
	} {
		if _, err := scenarios.Parse([]byte(base+yaml), "b.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}
