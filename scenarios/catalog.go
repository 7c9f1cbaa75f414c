package scenarios

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed catalog/*.yaml
var catalogFS embed.FS

// Builtin loads a built-in scenario by name.
func Builtin(name string) (*Scenario, error) {
	b, err := catalogFS.ReadFile("catalog/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("%w: unknown scenario %q (built in: %s; or give a path to a .yaml file)", ErrBadInput, name, strings.Join(BuiltinNames(), ", "))
	}
	return Parse(b, "builtin:"+name)
}

// BuiltinNames lists the catalog, sorted.
func BuiltinNames() []string {
	entries, _ := catalogFS.ReadDir("catalog")
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
