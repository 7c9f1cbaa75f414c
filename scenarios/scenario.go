// Package scenarios holds the scenario schema, its validation and the
// built-in catalog (embedded YAML files, each with its expected verdict per
// lock, next to the scenario rather than in test code).
package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/workloads"

	// The catalog names the adapters (locks:, expect:): they must be
	// registered wherever scenarios are loaded.
	_ "github.com/lockchaos/lockchaos/lockimpl/adapters"
)

// Scenario is one scenario file. YAML names are the snake_case of the Go
// field names; every zero value means the default given in its comment.
type Scenario struct {
	// Name identifies the scenario (default: the file name).
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Reproduces names the failure from the literature it reproduces (K1..).
	Reproduces string `yaml:"reproduces"`
	// Topology: single | sentinel | independent | cluster. Default single.
	Topology string `yaml:"topology"`
	// Nodes is the number of independent masters. Default 5.
	Nodes int `yaml:"nodes"`
	// AOF runs every node with appendonly (appendfsync always). Default off.
	AOF bool `yaml:"aof"`
	// Proxy routes client↔node links through the fault proxy. Default off
	// (on automatically when a fault needs it).
	Proxy bool `yaml:"proxy"`
	// Duration of the workload phase. Default 5s.
	Duration time.Duration `yaml:"duration"`
	// Recovery is the window after every fault healed in which the workload
	// keeps running, so liveness can see acquisitions succeed again. It
	// counts from the last heal (faults.Runner.Settled), so the run goes on
	// past Duration only for what is left of it then. Default 1s (0 with no
	// faults).
	Recovery time.Duration `yaml:"recovery"`
	// Seed for key choice, hold/think times and fault times. Default 1.
	Seed uint64 `yaml:"seed"`
	// Lock options (ttl, acquire_timeout, ...), see lockimpl.Options.
	Lock lockimpl.Options `yaml:"lock"`
	// Locks the scenario is meant for (matrix default); empty = all. The
	// list names built-ins, each standing for its capabilities too: a
	// user's lock, or a new correct built-in, runs wherever the built-in
	// of its kind is listed (runner.StandsByCapabilities, runner.StandIn). Broken
	// locks, controls and adapters run only where they are named.
	Locks []string `yaml:"locks"`
	// Workload drives the clients.
	Workload workloads.Config `yaml:"workload"`
	// Faults in schedule order.
	Faults []faults.Spec `yaml:"faults"`
	// Expect maps a lock name (or "default") to check → expected verdict
	// (valid | invalid | unknown | any), which every seed must meet; or to a
	// rate, {invalid: ">=0.8", why: "..."}: the verdict on at least that
	// share of the seeds, with the reason it is not every seed. Checks not
	// listed must be valid, unless "*" gives another verdict for them.
	Expect map[string]map[string]Want `yaml:"expect"`
	// Backends names where a backend gives other verdicts, and why (a
	// container restart is slower than a process restart, ...): on that
	// backend each lock listed under its expect replaces the lock's
	// expectation above. See ForBackend.
	Backends map[string]BackendExpect `yaml:"backends,omitempty"`
	// Thresholds are k6-style conditions over results (e.g. "throughput > 100").
	Thresholds []string `yaml:"thresholds"`

	// Source is where the scenario came from (file path or builtin:NAME).
	Source string `yaml:"-"`
	// BackendNote says which expectations ForBackend replaced, and why.
	BackendNote string `yaml:"-"`
}

// ErrBadInput marks scenario errors (exit code 3).
var ErrBadInput = errors.New("bad input")

// Parse decodes and validates a scenario. Unknown fields are errors naming
// the field and line. source names the input in messages.
func Parse(data []byte, source string) (*Scenario, error) { return parse(data, source, true) }

// ParseSaved decodes a scenario saved in a run directory. The run already
// happened: the rules that refuse a fault before a run starts (firings
// outside the run, targets that do not exist: faults.ValidateRun) do not
// apply, so that a run made before a rule existed can still be checked; the
// checker reports what its faults did.
func ParseSaved(data []byte, source string) (*Scenario, error) { return parse(data, source, false) }

func parse(data []byte, source string, beforeRun bool) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) { // yaml's own message is a bare "EOF"
			return nil, fmt.Errorf("%w: %s: document: no YAML in it (a scenario with every default is {})", ErrBadInput, source)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, source, cleanYAMLErr(data, nameFields(data, err)))
	}
	s.Source = source
	if s.Name == "" {
		base := source[strings.LastIndexAny(source, "/:")+1:]
		s.Name = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	}
	if err := s.validate(beforeRun); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, source, err)
	}
	return &s, nil
}

func cleanYAMLErr(data []byte, err error) string {
	msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n  ", "; ")
	if strings.HasPrefix(msg, "line ") || strings.HasPrefix(msg, "unmarshal errors:") {
		return msg
	}
	// yaml names no line for a bad character (control, invalid UTF-8) nor
	// for an error on the first line: find the bad character's line, else
	// the error is the document's as a whole.
	for i, line := range bytes.Split(data, []byte("\n")) {
		if !utf8.Valid(line) || bytes.ContainsFunc(line, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\r' }) {
			return fmt.Sprintf("line %d: %s", i+1, msg)
		}
	}
	return "document: " + msg
}

// typeErrLine matches a yaml type error: "line N: cannot unmarshal !!tag
// `value` into T" (value cut to 7 characters and "..." when long).
var typeErrLine = regexp.MustCompile("^line ([0-9]+): cannot unmarshal \\S+(?: `(.*)`)? into ")

// nameFields puts the field's path (duration, lock.ttl, faults[0].at)
// into each of yaml's type errors, which name only the line and the value.
func nameFields(data []byte, err error) error {
	var te *yaml.TypeError
	var root yaml.Node
	if !errors.As(err, &te) || yaml.Unmarshal(data, &root) != nil {
		return err
	}
	out := &yaml.TypeError{Errors: append([]string{}, te.Errors...)}
	for i, e := range out.Errors {
		m := typeErrLine.FindStringSubmatch(e)
		if m == nil || !strings.Contains(e, "`") { // no value: a map or sequence
			continue
		}
		line, _ := strconv.Atoi(m[1])
		value, cut := strings.CutSuffix(m[2], "...")
		var paths []string
		scalarPaths(&root, "", func(path string, n *yaml.Node) {
			if n.Line == line && (n.Value == value || cut && strings.HasPrefix(n.Value, value)) {
				paths = append(paths, path)
			}
		})
		if len(paths) == 1 && paths[0] != "" {
			prefix := "line " + m[1] + ": "
			out.Errors[i] = prefix + paths[0] + ": " + strings.TrimPrefix(e, prefix)
		}
	}
	return out
}

// scalarPaths calls f with every scalar value under n and its field path.
func scalarPaths(n *yaml.Node, path string, f func(string, *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			scalarPaths(c, path, f)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if path != "" {
				k = path + "." + k
			}
			scalarPaths(n.Content[i+1], k, f)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			scalarPaths(c, fmt.Sprintf("%s[%d]", path, i), f)
		}
	case yaml.ScalarNode:
		f(path, n)
	}
}

// LoadFile reads a scenario file.
func LoadFile(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: scenario file: %v", ErrBadInput, err)
	}
	return Parse(b, path)
}

// Load resolves NAME (built-in) or a path to a .yaml/.yml file.
func Load(nameOrPath string) (*Scenario, error) {
	if strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml") || strings.ContainsRune(nameOrPath, '/') {
		return LoadFile(nameOrPath)
	}
	return Builtin(nameOrPath)
}

// CheckNames are the checker's checks an expectation may name: every
// check but faults (a fault that did not take effect makes the verdict
// unknown, whatever a scenario expects).
var CheckNames = func() []string {
	var out []string
	for _, c := range checker.AllChecks {
		if c != checker.CheckFaults {
			out = append(out, c)
		}
	}
	return out
}()

// Validate fills defaults and reports the first bad field with its value,
// including faults that could not take effect in this run.
func (s *Scenario) Validate() error { return s.validate(true) }

func (s *Scenario) validate(beforeRun bool) error {
	if s.Topology == "" {
		s.Topology = "single"
	}
	switch s.Topology {
	case "single", "sentinel", "independent", "cluster":
	default:
		return fmt.Errorf("topology: %q is not one of single, sentinel, independent, cluster", s.Topology)
	}
	if s.Nodes == 0 {
		s.Nodes = 5
	}
	if s.Nodes < 1 || s.Nodes > 15 {
		return fmt.Errorf("nodes: %d is not in 1..15", s.Nodes)
	}
	if s.Duration == 0 {
		s.Duration = 5 * time.Second
	}
	if s.Duration < 0 || s.Duration > 24*time.Hour {
		return fmt.Errorf("duration: %v is not in (0, 24h]", s.Duration)
	}
	if s.Recovery < 0 {
		return fmt.Errorf("recovery: %v is negative", s.Recovery)
	}
	if s.Recovery == 0 && len(s.Faults) > 0 {
		s.Recovery = time.Second
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if err := s.Lock.WithDefaults().Validate(); err != nil {
		return err
	}
	for i, l := range s.Locks {
		if _, _, err := lockimpl.Lookup(l); err != nil {
			return fmt.Errorf("locks[%d]: %v", i, err)
		}
	}
	if err := s.Workload.Validate(); err != nil {
		return err
	}
	run := faults.Run{Duration: s.Duration, Recovery: s.Recovery, Clients: s.Workload.Clients,
		Topology: s.Topology, Nodes: cluster.DataNodes(s.Topology, s.Nodes), AOF: s.AOF}
	for i, f := range s.Faults {
		if err := faults.Validate(f, i); err != nil {
			return err
		}
		// Against this run (again after CLI overrides of duration or
		// clients): a fault that cannot fire or aims at nothing is refused.
		if !beforeRun {
			continue
		}
		if err := faults.ValidateRun(f, i, run); err != nil {
			return err
		}
	}
	if err := validateExpect("expect", s.Expect); err != nil {
		return err
	}
	for b, be := range s.Backends {
		bp := keyPath("backends", b)
		if !contains(backendNames, b) {
			return fmt.Errorf("%s: %q is not a backend (known: %s)", bp, b, strings.Join(backendNames, ", "))
		}
		if strings.TrimSpace(be.Why) == "" {
			return fmt.Errorf("%s.why: missing: say why verdicts differ on this backend", bp)
		}
		if len(be.Expect) == 0 {
			return fmt.Errorf("%s.expect: missing: name the locks whose expectations differ", bp)
		}
		if err := validateExpect(bp+".expect", be.Expect); err != nil {
			return err
		}
	}
	return nil
}

// backendNames are the backends a scenario may name under backends.
var backendNames = []string{"process", "docker", "embedded", "external"}

// BackendExpect is a scenario's expectations on one backend where they
// differ, with the reason.
type BackendExpect struct {
	Why    string                     `yaml:"why"`
	Expect map[string]map[string]Want `yaml:"expect"`
}

// ForBackend returns the scenario as it is judged on backend b: s itself,
// or, when s names b under backends, a copy whose Expect has b's entries in
// place of the locks' own (Backends cleared, so that a saved copy reads the
// same).
func (s *Scenario) ForBackend(b string) *Scenario {
	be, ok := s.Backends[b]
	if !ok {
		return s
	}
	c := *s
	c.Expect = make(map[string]map[string]Want, len(s.Expect)+len(be.Expect))
	for lock, m := range s.Expect {
		c.Expect[lock] = m
	}
	for lock, m := range be.Expect {
		c.Expect[lock] = m
	}
	c.Backends = nil
	c.BackendNote = fmt.Sprintf("on backend %s the expectations of %s differ: %s", b, strings.Join(sortedKeys(be.Expect), ", "), strings.TrimSpace(be.Why))
	return &c
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func validateExpect(path string, expect map[string]map[string]Want) error {
	for lock, m := range expect {
		lp := keyPath(path, lock)
		if lock != "default" {
			if _, _, err := lockimpl.Lookup(lock); err != nil {
				return fmt.Errorf("%s: %v", lp, err)
			}
		}
		for check, w := range m {
			if check != "*" && !contains(CheckNames, check) {
				return fmt.Errorf("%s: %q is not a check (known: %s, or *)", keyPath(lp, check), check, strings.Join(CheckNames, ", "))
			}
			if err := w.validate(); err != nil {
				return fmt.Errorf("%s%v", keyPath(lp, check), err)
			}
		}
	}
	return nil
}

// plainKey is a map key that reads plainly in a field path (expect.simple).
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_*-]+$`)

// keyPath is the field path of map key k under path: path.k, or path["k"]
// when k is empty or holds spaces, dots or other punctuation.
func keyPath(path, k string) string {
	if plainKey.MatchString(k) {
		return path + "." + k
	}
	return fmt.Sprintf("%s[%q]", path, k)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Expectation returns check → expected verdict for lock (its own entry, else
// "default"); nil when the scenario states none. A rate expectation reads
// "invalid >=0.8" (see ParseWant).
func (s *Scenario) Expectation(lock string) map[string]string {
	m, ok := s.Expect[lock]
	if !ok {
		m = s.Expect["default"]
	}
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for check, w := range m {
		out[check] = w.String()
	}
	return out
}

// Matches reports whether one run's check verdicts meet the expectation
// (nil expectation: every check valid), with the mismatches. One run is one
// seed: a rate expectation ">=F" is then met only by its verdict.
func Matches(exp map[string]string, checks map[string]string) (bool, []string) {
	counts := map[string]map[string]int{}
	for n, v := range checks {
		counts[n] = map[string]int{v: 1}
	}
	return MatchRates(exp, counts, 1)
}

// MatchRates reports whether the verdicts of n seeds meet the expectation:
// counts[check][verdict] is on how many seeds the check had that verdict. A
// plain expectation must hold on every seed; a rate ">=F" holds when the
// verdict's share of the n seeds is at least F.
func MatchRates(exp map[string]string, counts map[string]map[string]int, n int) (bool, []string) {
	var bad []string
	names := make([]string, 0, len(counts))
	for c := range counts {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		want := WantFor(exp, c)
		w, err := ParseWant(want)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: expectation %q: %v", c, want, err))
			continue
		}
		if w.Verdict == "any" {
			continue
		}
		hits := counts[c][w.Verdict]
		if w.Met(hits, n) {
			continue
		}
		if n == 1 {
			got := ""
			for v := range counts[c] {
				got = v
			}
			bad = append(bad, fmt.Sprintf("%s: %s, expected %s", c, got, want))
			continue
		}
		bad = append(bad, fmt.Sprintf("%s: %s in %d/%d seeds (%s), expected %s", c, w.Verdict, hits, n, VerdictCounts(counts[c]), want))
	}
	return len(bad) == 0, bad
}

// VerdictCounts is "invalid 2, valid 1": how many seeds had each verdict.
// WantFor is exp's expectation for check: its own entry, else "*", else
// valid.
func WantFor(exp map[string]string, check string) string {
	if w, ok := exp[check]; ok {
		return w
	}
	if w, ok := exp["*"]; ok {
		return w
	}
	return "valid"
}

func VerdictCounts(m map[string]int) string {
	vs := make([]string, 0, len(m))
	for v := range m {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%s %d", v, m[v])
	}
	return strings.Join(parts, ", ")
}
