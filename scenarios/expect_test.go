package scenarios_test

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/scenarios"
)

// Both forms of an expectation parse; a rate needs its why; bad shapes name
// the field.
func TestExpectForms(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       string // Expectation("simple")["mutex"], or the error's text
		err        bool
	}{
		{"plain", "expect:\n  simple: {mutex: invalid}\n", "invalid", false},
		{"rate", "expect:\n  simple:\n    mutex: {invalid: \">=0.8\", why: \"the pause lands after the hold ends on some seeds\"}\n", "invalid >=0.8", false},
		{"rate percent", "expect:\n  simple:\n    mutex: {invalid: \">=80%\", why: \"x\"}\n", "invalid >=0.8", false},
		{"rate of 1 is the plain form", "expect:\n  simple:\n    mutex: {invalid: \">=1\", why: \"x\"}\n", "expect.simple.mutex.invalid: \">=1\": a rate must be in (0, 1)", true},
		{"rate without why", "expect:\n  simple:\n    mutex: {invalid: \">=0.8\"}\n", "expect.simple.mutex.why: a rate expectation (invalid >=0.8) must say why", true},
		{"rate with blank why", "expect:\n  simple:\n    mutex: {invalid: \">=0.8\", why: \"  \"}\n", "expect.simple.mutex.why", true},
		{"bad rate", "expect:\n  simple:\n    mutex: {invalid: \"often\", why: x}\n", `expect.simple.mutex.invalid: "often": a rate reads ">=F"`, true},
		{"rate out of range", "expect:\n  simple:\n    mutex: {invalid: \">=1.5\", why: x}\n", `expect.simple.mutex.invalid: ">=1.5": 1.5 is not in (0, 1]`, true},
		{"bad verdict in rate", "expect:\n  simple:\n    mutex: {broken: \">=0.5\", why: x}\n", `expect.simple.mutex.broken: "broken" is not one of`, true},
		{"any rate", "expect:\n  simple:\n    mutex: {any: \">=0.5\", why: x}\n", "expect.simple.mutex.any", true},
		{"two verdicts", "expect:\n  simple:\n    mutex: {invalid: \">=0.5\", valid: \">=0.5\", why: x}\n", "expect.simple.mutex.valid: a rate expectation names one verdict", true},
		{"why on plain", "expect:\n  simple:\n    mutex: {why: x}\n", "expect.simple.mutex: a rate expectation needs a verdict", true},
		{"list", "expect:\n  simple:\n    mutex: [invalid]\n", "expect.simple.mutex: must be a verdict", true},
		{"plain bad verdict", "expect:\n  simple: {mutex: maybe}\n", `expect.simple.mutex: "maybe" is not one of valid, invalid, unknown, any`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := scenarios.Parse([]byte("duration: 1s\n"+c.yaml), "t.yaml")
			if c.err {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one containing %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Expectation("simple")["mutex"]; got != c.want {
				t.Errorf("Expectation = %q, want %q", got, c.want)
			}
		})
	}
}

// A run directory keeps its scenario as YAML and `check DIR` reads it back:
// the rate form survives the round trip.
func TestExpectRoundTrip(t *testing.T) {
	src := "duration: 1s\nexpect:\n  default: {mutex: invalid, resource: any}\n  simple:\n    mutex: {invalid: \">=0.75\", why: \"one seed in four ends before the pause\"}\n"
	s, err := scenarios.Parse([]byte(src), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := scenarios.Parse(b, "saved.yaml")
	if err != nil {
		t.Fatalf("saved scenario does not parse: %v\n%s", err, b)
	}
	for _, lock := range []string{"simple", "fenced"} {
		a, b := s.Expectation(lock), s2.Expectation(lock)
		if len(a) != len(b) || a["mutex"] != b["mutex"] || a["resource"] != b["resource"] {
			t.Errorf("%s: %v after the round trip, want %v", lock, b, a)
		}
	}
	if w := s2.Expect["simple"]["mutex"]; w.Why != "one seed in four ends before the pause" {
		t.Errorf("why = %q after the round trip", w.Why)
	}
}

// MatchRates: a plain expectation holds on every seed, a rate on its share.
func TestMatchRates(t *testing.T) {
	type counts = map[string]map[string]int
	cases := []struct {
		name   string
		exp    map[string]string
		counts counts
		n      int
		ok     bool
	}{
		{"plain every seed", map[string]string{"mutex": "invalid"}, counts{"mutex": {"invalid": 3}, "resource": {"valid": 3}}, 3, true},
		{"plain one seed short", map[string]string{"mutex": "invalid"}, counts{"mutex": {"invalid": 2, "valid": 1}}, 3, false},
		{"unlisted must be valid on every seed", map[string]string{"mutex": "invalid"}, counts{"mutex": {"invalid": 3}, "resource": {"valid": 2, "invalid": 1}}, 3, false},
		{"star any", map[string]string{"*": "any"}, counts{"mutex": {"invalid": 1, "valid": 2}}, 3, true},
		{"rate met exactly", map[string]string{"mutex": "invalid >=0.8"}, counts{"mutex": {"invalid": 8, "valid": 2}}, 10, true},
		{"rate met above", map[string]string{"mutex": "invalid >=0.8"}, counts{"mutex": {"invalid": 9, "unknown": 1}}, 10, true},
		{"rate missed", map[string]string{"mutex": "invalid >=0.8"}, counts{"mutex": {"invalid": 7, "valid": 3}}, 10, false},
		{"rate, verdict never seen", map[string]string{"mutex": "invalid >=0.5"}, counts{"mutex": {"valid": 3}}, 3, false},
		{"rate as star", map[string]string{"*": "invalid >=0.5"}, counts{"mutex": {"invalid": 2, "valid": 1}}, 3, true},
		{"one seed, rate, verdict seen", map[string]string{"mutex": "invalid >=0.8"}, counts{"mutex": {"invalid": 1}}, 1, true},
		{"one seed, rate, verdict not seen", map[string]string{"mutex": "invalid >=0.8"}, counts{"mutex": {"valid": 1}}, 1, false},
		{"nil expectation", nil, counts{"mutex": {"valid": 2}}, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, bad := scenarios.MatchRates(c.exp, c.counts, c.n)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v (mismatches %q)", ok, c.ok, bad)
			}
			if !ok && len(bad) == 0 {
				t.Error("a mismatch without its reason")
			}
			if ok && len(bad) > 0 {
				t.Errorf("matched with mismatches %q", bad)
			}
		})
	}
	// The mismatch text gives the count over the seeds.
	_, bad := scenarios.MatchRates(map[string]string{"mutex": "invalid"}, counts{"mutex": {"invalid": 2, "valid": 1}}, 3)
	if len(bad) != 1 || !strings.Contains(bad[0], "invalid in 2/3 seeds") {
		t.Errorf("mismatch %q does not give the count", bad)
	}
}
