// Package explore searches the fault vocabulary for schedules no catalog
// scenario covers: it generates fault schedules (kinds, points, targets,
// directions, `when:` triggers, magnitudes relative to the TTL, workload
// shapes), runs each on a lock and on its reference (the built-in correct
// lock of the same capabilities), keeps as a finding a check the reference
// passes on every seed while the lock fails on at least one, shrinks each
// finding to a minimal schedule and saves it as a scenario that replays
// with `lockchaos run --expect`. Margins bisect, per fault family, the
// smallest magnitude at which a lock fails.
//
// It depends only on runner.Run for one run (and runner.RenderDir to draw
// a finding's run), the scenario schema, the history vocabulary, the
// faults registry and, for report.html and the margin plot, the report
// package.
package explore

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/workloads"
)

// Magnitude fields: where a fault's magnitude goes. Time magnitudes are
// multiples of the TTL; a rate magnitude is the rate itself.
const (
	MagDuration = "duration"
	MagDelay    = "params.delay"
	MagLatency  = "params.latency"
	MagDelta    = "params.delta"
	MagOffset   = "params.offset"
	MagRate     = "params.rate"
)

// Fault is one generated fault: its spec, without the magnitude, and the
// magnitude with the field it sets.
type Fault struct {
	Spec faults.Spec `json:"spec"`
	// Mag is the magnitude: a multiple of the TTL (MagField a time), or
	// the rate (MagRate). Negative time magnitudes (a clock jumping back)
	// are allowed for deltas and offsets.
	Mag float64 `json:"mag,omitempty"`
	// MagField is where Mag goes; "" for a fault without one (a crash).
	MagField string `json:"mag_field,omitempty"`
	// Hold is how long a fault whose magnitude is not its duration lasts
	// (a stall's, a latency's window), as a multiple of the TTL.
	Hold float64 `json:"hold,omitempty"`
}

// Schedule is one generated test: a topology, a lock TTL, a workload shape
// and one to three faults.
type Schedule struct {
	Topology string        `json:"topology"`
	Nodes    int           `json:"nodes,omitempty"`
	TTL      time.Duration `json:"ttl"`
	Duration time.Duration `json:"duration"`
	Recovery time.Duration `json:"recovery"`
	Clients  int           `json:"clients"`
	Keys     int           `json:"keys"`
	Hold     time.Duration `json:"hold"`
	Think    time.Duration `json:"think"`
	Reentry  int           `json:"reentry,omitempty"`
	Resource string        `json:"resource"`
	// API is the library idiom a driver lock is called in (its lock
	// option api; "" its default), drawn among its lock file's apis.
	API string `json:"api,omitempty"`
	// Tasks is how many clients share a driver process (the lock option
	// tasks; 0: a process a client), drawn for a driver with the tasks
	// extension.
	Tasks  int     `json:"tasks,omitempty"`
	Faults []Fault `json:"faults"`
}

// Clone is a deep copy (faults and their params).
func (s Schedule) Clone() Schedule {
	c := s
	c.Faults = make([]Fault, len(s.Faults))
	for i, f := range s.Faults {
		f.Spec.Params = maps.Clone(f.Spec.Params)
		f.Spec.Random = slices.Clone(f.Spec.Random)
		c.Faults[i] = f
	}
	return c
}

// magDuration is m×ttl, rounded to the millisecond, at least 1ms.
func magDuration(m float64, ttl time.Duration) time.Duration {
	d := time.Duration(m * float64(ttl)).Round(time.Millisecond)
	if d == 0 {
		d = time.Millisecond
		if m < 0 {
			d = -d
		}
	}
	return d
}

// Spec is the fault's spec with its magnitude set, for a lock of ttl.
func (f Fault) SpecFor(ttl time.Duration) faults.Spec {
	s := f.Spec
	s.Params = maps.Clone(f.Spec.Params)
	if f.Hold > 0 {
		s.Duration = magDuration(f.Hold, ttl)
	}
	set := func(k, v string) {
		if s.Params == nil {
			s.Params = map[string]string{}
		}
		s.Params[k] = v
	}
	switch f.MagField {
	case MagDuration:
		s.Duration = magDuration(f.Mag, ttl)
	case MagDelay:
		set("delay", magDuration(f.Mag, ttl).String())
	case MagLatency:
		set("latency", magDuration(f.Mag, ttl).String())
	case MagDelta:
		set("delta", magDuration(f.Mag, ttl).String())
	case MagOffset:
		set("offset", magDuration(f.Mag, ttl).String())
	case MagRate:
		set("rate", strconv.FormatFloat(f.Mag, 'g', 4, 64))
	}
	return s
}

// Scenario materialises the schedule as a scenario named name (validated).
func (s Schedule) Scenario(name string) (*scenarios.Scenario, error) {
	hl := true
	sc := &scenarios.Scenario{
		Name:     name,
		Topology: s.Topology,
		Nodes:    s.Nodes,
		Duration: s.Duration,
		Recovery: s.Recovery,
		Lock:     lockimpl.Options{TTL: s.TTL},
		Workload: workloads.Config{
			Clients: s.Clients, Keys: s.Keys, Reentry: s.Reentry, Resource: s.Resource, HonourLost: &hl,
			Hold: workloads.Range{Min: s.Hold, Max: s.Hold}, Think: workloads.Range{Min: s.Think, Max: s.Think},
		},
	}
	for _, f := range s.Faults {
		sc.Faults = append(sc.Faults, f.SpecFor(s.TTL))
	}
	sc.Lock.Extra = s.LockExtra(nil)
	sc.Description = s.Describe()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// LockExtra is base (the explored lock's options) with the schedule's API
// mode and tasks, a new map; nil when all are empty.
func (s Schedule) LockExtra(base map[string]string) map[string]string {
	if s.API == "" && s.Tasks < 2 {
		return maps.Clone(base)
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	if s.API != "" {
		out["api"] = s.API
	}
	if s.Tasks > 1 {
		out[driver.TasksOption] = strconv.Itoa(s.Tasks)
	}
	return out
}

// Describe is the schedule in words: "3 clients, 1 key, hold 0.1×TTL;
// pause-client 1.2×TTL at before-release (holder)".
func (s Schedule) Describe() string {
	var parts []string
	for _, f := range s.Faults {
		parts = append(parts, f.Describe())
	}
	fs := "no faults"
	if len(parts) > 0 {
		fs = strings.Join(parts, "; ")
	}
	api := ""
	if s.API != "" {
		api = ", api " + s.API
	}
	if s.Tasks > 1 {
		api += fmt.Sprintf(", %d clients a process", s.Tasks)
	}
	return fmt.Sprintf("%s, TTL %v, %d clients, %d key(s), hold %v, think %v%s%s, %v run: %s",
		s.Topology, s.TTL, s.Clients, s.Keys, s.Hold, s.Think, reentryWords(s.Reentry), api, s.Duration, fs)
}

func reentryWords(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", reentry %d", n)
}

// Describe is one fault in words.
func (f Fault) Describe() string {
	var b strings.Builder
	b.WriteString(f.Spec.Kind)
	switch f.MagField {
	case "":
	case MagRate:
		fmt.Fprintf(&b, " rate %s", strconv.FormatFloat(f.Mag, 'g', 3, 64))
	default:
		fmt.Fprintf(&b, " %s %s×TTL", strings.TrimPrefix(f.MagField, "params."), strconv.FormatFloat(f.Mag, 'g', 3, 64))
	}
	if f.Spec.Point != "" {
		fmt.Fprintf(&b, " at %s", f.Spec.Point)
	}
	if t := f.Spec.Target; t != "" {
		fmt.Fprintf(&b, " on %s", t)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Spec.Params)) {
		if "params."+k == f.MagField {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", k, f.Spec.Params[k])
	}
	if f.Spec.When != "" {
		fmt.Fprintf(&b, " when %s", f.Spec.When)
	}
	fmt.Fprintf(&b, " from %v", f.Spec.At)
	if f.Spec.Count > 1 {
		fmt.Fprintf(&b, " ×%d every %v", f.Spec.Count, f.Spec.Every)
	}
	return b.String()
}

// Shape is the schedule without its times and magnitudes: the topology and
// each fault's kind, point, target and trigger, in order. Two findings of
// the same check and cause whose shrunk schedules have one shape are one
// finding (Found.Merged).
func (s Schedule) Shape() string {
	parts := []string{s.Topology}
	for _, f := range s.Faults {
		parts = append(parts, f.Spec.Kind+"@"+f.Spec.Point+"/"+f.Spec.Target+"/"+f.Spec.When)
	}
	return strings.Join(parts, ";")
}

// Size orders schedules for shrinking: fewer faults, firings, params,
// clients, keys and a shorter run are smaller.
func (s Schedule) Size() int {
	n := 1000*len(s.Faults) + 10*s.Clients + 10*s.Keys + 5*s.Reentry + int(s.Duration/(100*time.Millisecond))
	for _, f := range s.Faults {
		n += 20*max(f.Spec.Count, 1) + 10*len(f.Spec.Params)
		if f.Spec.When != "" {
			n += 10
		}
	}
	return n
}
