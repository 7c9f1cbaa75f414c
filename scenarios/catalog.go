package scenarios

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed catalog/*.yaml
var catalogFS embed.FS

// Builtin loads a built-in scenario by name: a catalog scenario, or one of
// the pause-point sweep (SweepNames), so a sweep scenario is named wherever
// a catalog name is accepted (run, matrix --scenarios).
func Builtin(name string) (*Scenario, error) {
	b, err := catalogFS.ReadFile("catalog/" + name + ".yaml")
	if err == nil {
		return Parse(b, "builtin:"+name)
	}
	if b, err := sweepFS.ReadFile("sweep/" + name + ".yaml"); err == nil {
		return Parse(b, "builtin:sweep/"+name)
	}
	return nil, fmt.Errorf("%w: unknown scenario %q (built in: %s; the sweep: %s; or give a path to a .yaml file)",
		ErrBadInput, name, strings.Join(BuiltinNames(), ", "), strings.Join(SweepNames(), ", "))
}

// BuiltinNames lists the catalog, sorted (not the sweep: SweepNames).
func BuiltinNames() []string { return yamlNames(catalogFS, "catalog") }

// yamlNames lists dir's .yaml files without the suffix, sorted.
func yamlNames(fsys embed.FS, dir string) []string {
	entries, _ := fsys.ReadDir(dir)
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// All loads every built-in scenario.
func All() ([]*Scenario, error) {
	var out []*Scenario
	for _, n := range BuiltinNames() {
		s, err := Builtin(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
