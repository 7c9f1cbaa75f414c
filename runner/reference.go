package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/scenarios"
)

// CapabilityReference names the built-in correct lock of info's capabilities: the lock a
// user's lock with these capabilities is measured against (its bar in
// locktest, its stand-in in a scenario's locks: list).
func CapabilityReference(info lockimpl.Info) string {
	switch {
	case info.NeedsReplicas:
		return "simple-wait"
	case info.MinNodes > 0:
		return "redlock"
	case info.Renews:
		return "watchdog"
	case info.Fenced:
		return "fenced"
	case info.Reentrant:
		return "reentrant"
	}
	return "simple"
}

// sameCapabilities: a and b declare the same scenario-deciding
// capabilities (NoCluster is a topology limit, judged on its own).
func sameCapabilities(a, b lockimpl.Info) bool {
	return a.Reentrant == b.Reentrant && a.Fenced == b.Fenced && a.Renews == b.Renews &&
		a.NeedsReplicas == b.NeedsReplicas && (a.MinNodes > 0) == (b.MinNodes > 0)
}

// StandsByCapabilities says whether a lock's applicability and expectations come
// from its capabilities rather than from its own name in the catalog: a
// user's lock, or a correct built-in that is not itself the reference of
// its capabilities (CapabilityReference). Every correct built-in today is the reference
// of its capabilities, so it runs only where it is named (or in a scenario with no
// locks: list); a new correct built-in with, say, simple's capabilities
// runs wherever simple runs, without a catalog edit. Broken locks,
// controls and adapters stay where they are named: a control is placed on
// the scenarios that catch it, an adapter where its faults reach it.
func StandsByCapabilities(info lockimpl.Info) bool {
	return info.Kind == lockimpl.User || info.Kind == lockimpl.Correct && CapabilityReference(info) != info.Name
}

// StandIn is, for a lock that stands by its capabilities (StandsByCapabilities) in a
// scenario whose locks: list does not name it, the listed built-in it
// stands with: the reference of its capabilities (CapabilityReference) when listed, else
// a listed lock with the same capabilities (a correct one first). A
// scenario's list names built-ins for the capabilities they stand for, so
// such a lock runs wherever the reference of its capabilities runs. judge says
// whether that lock's expectation judges it (a correct lock or a correct
// control's); when false, the scenario's default does. ok is false when no
// listed lock stands for it.
func StandIn(info lockimpl.Info, s *scenarios.Scenario) (name string, judge, ok bool) {
	if !StandsByCapabilities(info) || len(s.Locks) == 0 || slices.Contains(s.Locks, info.Name) {
		return "", false, false
	}
	correct := func(i lockimpl.Info) bool { return i.Kind == lockimpl.Correct || i.Kind == lockimpl.Control }
	if ref := CapabilityReference(info); slices.Contains(s.Locks, ref) {
		if ri, _, err := lockimpl.Lookup(ref); err == nil {
			return ref, correct(ri), true
		}
	}
	var other string
	for _, l := range s.Locks {
		li, _, err := lockimpl.Lookup(l)
		if err != nil || li.Kind == lockimpl.User || !sameCapabilities(li, info) {
			continue
		}
		if correct(li) {
			return l, true, true
		}
		if other == "" {
			other = l
		}
	}
	return other, false, other != ""
}

// ExpectationFor is the expectation lock is judged by in s: its own entry;
// else, for a lock that stands by its capabilities (StandsByCapabilities), the expectation of the correct built-in it
// stands with (StandIn in a scenario with a locks: list, the built-in of
// its capabilities, CapabilityReference, in one without) with every "invalid" relaxed to
// "any": the built-in's expected failures show a limit of the design, and
// doing better than the built-in is no failure; else the scenario's
// default.
func ExpectationFor(s *scenarios.Scenario, lock string) map[string]string {
	if _, own := s.Expect[lock]; own {
		return s.Expectation(lock)
	}
	info, _, err := lockimpl.Lookup(lock)
	if err != nil {
		return s.Expectation(lock)
	}
	return expectationFor(s, info)
}

// expectationFor is ExpectationFor for a lock without an entry of its own.
func expectationFor(s *scenarios.Scenario, info lockimpl.Info) map[string]string {
	lock := info.Name
	if !StandsByCapabilities(info) {
		return s.Expectation(lock)
	}
	name, judge := CapabilityReference(info), true
	if len(s.Locks) > 0 {
		var ok bool
		if name, judge, ok = StandIn(info, s); !ok {
			return s.Expectation(lock)
		}
	}
	if ri, _, err := lockimpl.Lookup(name); err != nil || !judge || (ri.Kind != lockimpl.Correct && ri.Kind != lockimpl.Control) {
		return s.Expectation(lock)
	}
	return RelaxInvalid(s.Expectation(name))
}

// RelaxInvalid is exp with every "invalid" (a rate too) made "any": the bar
// a lock is held to by a correct lock's expectation, which it may beat.
func RelaxInvalid(exp map[string]string) map[string]string {
	if exp == nil {
		return nil
	}
	out := make(map[string]string, len(exp))
	for check, v := range exp {
		if v == "invalid" || strings.HasPrefix(v, "invalid ") {
			v = "any"
		}
		out[check] = v
	}
	return out
}

// listed says why a lock not named by a scenario's locks: list may still run
// in it (a lock that stands by its capabilities, standing with a listed built-in),
// or why not.
func listed(info lockimpl.Info, s *scenarios.Scenario) (bool, string) {
	if len(s.Locks) == 0 || slices.Contains(s.Locks, info.Name) {
		return true, ""
	}
	meant := "scenario is meant for " + strings.Join(s.Locks, ", ")
	if !StandsByCapabilities(info) {
		return false, meant
	}
	if _, _, ok := StandIn(info, s); !ok {
		return false, meant + " (none of them has the capabilities of this lock: " + info.Capabilities() + ")"
	}
	if s.Workload.Reentry > 0 && !info.Reentrant {
		return false, "re-enters the lock, which does not declare Reentrant"
	}
	return true, ""
}

// Applicable says whether a lock can run in a scenario's topology. A
// scenario's locks: list names built-ins; a user's lock runs where the
// reference of its capabilities (or a lock with the same capabilities) is listed (StandIn).
func Applicable(info lockimpl.Info, s *scenarios.Scenario) (bool, string) {
	if ok, why := listed(info, s); !ok {
		return false, why
	}
	if info.NoCluster != "" && s.Topology == "cluster" {
		return false, "cannot run on Redis Cluster: " + info.NoCluster
	}
	if info.NeedsReplicas && s.Topology != "sentinel" && s.Topology != "cluster" {
		return false, "needs a replica (sentinel or cluster topology)"
	}
	if info.MinNodes > 1 && s.Topology != "independent" {
		return false, fmt.Sprintf("needs %d independent masters", info.MinNodes)
	}
	return processApplicable(info, s)
}

// processApplicable says whether the application faults of s reach the
// lock: a cancel or a throw a driver whose lock file lists the extension
// they need, a sigterm a lock with a process of its own.
func processApplicable(info lockimpl.Info, s *scenarios.Scenario) (bool, string) {
	p, driver := lockimpl.ProcessNeedsOf(info.Name)
	for i, f := range s.Faults {
		switch {
		case f.Kind == history.FaultSigterm && !driver:
			return false, fmt.Sprintf("faults[%d] stops the client's process (sigterm): lock %s runs in lockchaos's own process", i, info.Name)
		case !driver:
		case f.Kind == history.FaultCancel:
			if err := p.Cancel(); err != nil {
				return false, fmt.Sprintf("faults[%d] cancels a call: %v", i, err)
			}
		case f.Kind == history.FaultThrow:
			if err := p.Extension("throw"); err != nil {
				return false, fmt.Sprintf("faults[%d] throws in the critical section: %v", i, err)
			}
		}
	}
	return true, ""
}
