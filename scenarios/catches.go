package scenarios

import "sort"

// Catches lists the scenarios of all that run lock and expect one of its
// checks invalid on every seed (a plain "invalid", not "any" or a rate)
// where the scenario's default (what a correct lock gets) does not: where
// the catalog asserts that the lock's own mistake is caught, rather than a
// fault that defeats every lock. For a broken control the list must not be
// empty: the catalog is then mutation-adequate for the mistakes it knows.
func Catches(lock string, all []*Scenario) []string {
	var out []string
	for _, s := range all {
		if len(s.Locks) > 0 && !contains(s.Locks, lock) {
			continue
		}
		def := s.Expect["default"]
		for check, w := range s.Expectation(lock) {
			if w == "invalid" && (def == nil || def[check].String() != "invalid") {
				out = append(out, s.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
