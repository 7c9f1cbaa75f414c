package scenarios_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/scenarios"
)

// namedRejection is what every rejection says after "bad input: SOURCE: ":
// a field path (topology, workload.clients, faults[0].at, expect.simple.mutex,
// expect[""], faults[2] (kind), locks[0]) followed by ":" or " (", or, for YAML that does
// not decode, the line ("line 3: ..." or yaml's "unmarshal errors:; line 3:
// ..."), or, for a file with no YAML document in it, "document:".
var namedRejection = regexp.MustCompile(`^(?:` +
	`[a-z_]+(?:\[[0-9]+\]|\["(?:[^"\\]|\\.)*"\]|\.[A-Za-z0-9_*-]+)*(?::| \()` + // field path
	`|line [0-9]+: ` +
	`|unmarshal errors:; line [0-9]+: ` +
	`|document: ` +
	`)`)

// FuzzParse feeds the parser and validator arbitrary YAML, seeded with
// every catalog scenario and the bad files of issue 16. Properties:
//   - no panic;
//   - every rejection wraps ErrBadInput and names where (namedRejection);
//   - a scenario that parses marshals (as runner saves it into the run
//     directory) and parses again, and marshalling that gives the same
//     bytes: `check DIR` reads back what `run` ran.
func FuzzParse(f *testing.F) {
	for _, n := range scenarios.BuiltinNames() {
		b, err := os.ReadFile(filepath.Join("catalog", n+".yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	bad, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	for _, p := range bad {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	const source = "fuzz.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenarios.Parse(data, source)
		if err != nil {
			checkRejection(t, err, source)
			return
		}
		saved, err := yaml.Marshal(s)
		if err != nil {
			t.Fatalf("a parsed scenario does not marshal: %v", err)
		}
		s2, err := scenarios.Parse(saved, source)
		if err != nil {
			t.Fatalf("a parsed scenario, saved, does not parse again: %v\nsaved:\n%s", err, saved)
		}
		again, err := yaml.Marshal(s2)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(saved) {
			t.Fatalf("save → parse → save changed the scenario:\nfirst:\n%s\nsecond:\n%s", saved, again)
		}
	})
}

func checkRejection(t *testing.T, err error, source string) {
	t.Helper()
	if !errors.Is(err, scenarios.ErrBadInput) {
		t.Fatalf("rejection does not wrap ErrBadInput: %v", err)
	}
	msg, ok := strings.CutPrefix(err.Error(), scenarios.ErrBadInput.Error()+": "+source+": ")
	if !ok {
		t.Fatalf("rejection does not start with %q: %v", "bad input: "+source+": ", err)
	}
	if !namedRejection.MatchString(msg) {
		t.Fatalf("rejection names no field or line: %q", msg)
	}
}

// The rejection format FuzzParse asserts holds for known bad inputs.
func TestRejectionsNameField(t *testing.T) {
	for _, in := range []string{
		"", "# only a comment\n", "duration: 2s\nfaults:\n  - {kind: pause-client, at: 5s, duration: 1s}\n",
		"workload: {clients: 3}\nfaults:\n  - {kind: pause-client, target: client:99, duration: 1s}\n",
		"a: [", "workload:\n  clientz: 3\n", "expect: {simple: {mutex: maybe}}\n",
	} {
		_, err := scenarios.Parse([]byte(in), "fuzz.yaml")
		if err == nil {
			t.Fatalf("%q accepted", in)
		}
		checkRejection(t, err, "fuzz.yaml")
	}
}
