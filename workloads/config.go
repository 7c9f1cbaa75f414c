package workloads

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config describes the clients' contention.
type Config struct {
	// Clients is the number of concurrent clients. Default 4.
	Clients int `yaml:"clients"`
	// Keys is the number of lock keys. Default 1.
	Keys int `yaml:"keys"`
	// KeyDist: uniform | zipf | hot | per-client. Default uniform.
	// per-client: client i always locks key i mod Keys, so with Keys >=
	// Clients no two clients share a key (uncontended: every acquire is one
	// SET that succeeds).
	KeyDist string `yaml:"key_dist"`
	// Zipf exponent s (> 1) for key_dist zipf. Default 1.2.
	Zipf float64 `yaml:"zipf"`
	// HotKeys and HotFraction for key_dist hot: HotFraction of the cycles go
	// to the first HotKeys keys. Defaults 1 and 0.8.
	HotKeys     int     `yaml:"hot_keys"`
	HotFraction float64 `yaml:"hot_fraction"`
	// Hold is the time between the resource read and write ("10ms" or a
	// uniform range "5ms-15ms"). Default 0.
	Hold Range `yaml:"hold"`
	// Think is the pause between release and the next acquire. Default 0.
	Think Range `yaml:"think"`
	// Reentry is the number of nested re-acquisitions per cycle, for
	// reentrant locks (ignored by others). Default 0.
	Reentry int `yaml:"reentry"`
	// Resource behind the lock: counter | inventory | register. Default
	// counter. register rejects writes with a stale fencing token.
	Resource string `yaml:"resource"`
	// Stock per key for resource inventory. Default 1000.
	Stock int `yaml:"stock"`
	// HonourLost: clients check Lost()/Deadline before writing and skip the
	// write when the lease is gone. Default true.
	HonourLost *bool `yaml:"honour_lost"`
	// Mode: closed (each client loops) | open (cycles start at Rate per
	// second in total, queueing when clients are busy). Default closed.
	Mode string `yaml:"mode"`
	// Rate of cycle starts per second in open mode.
	Rate float64 `yaml:"rate"`
	// Try makes clients use TryAcquire (one attempt) instead of Acquire.
	Try bool `yaml:"try"`
	// Stagger delays client i's start by i×Stagger. Default 0.
	Stagger time.Duration `yaml:"stagger"`
}

// KeyDists are the values of Config.KeyDist.
var KeyDists = []string{"uniform", "zipf", "hot", "per-client"}

// Range is a fixed duration or a uniform range, written "10ms" or "5ms-15ms".
type Range struct {
	Min, Max time.Duration
}

// UnmarshalYAML parses "10ms" or "5ms-15ms".
func (r *Range) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := ParseRange(s)
	if err != nil {
		// As a yaml type error, so that the scenario parser names the
		// field (workload.hold: ...) as it does for every other type error.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal !!str `%s` into a duration or a range like 5ms-15ms", n.Line, n.Value)}}
	}
	*r = v
	return nil
}

// MarshalYAML writes the range back in its input form.
func (r Range) MarshalYAML() (any, error) { return r.String(), nil }

func (r Range) String() string {
	if r.Min == r.Max {
		return r.Min.String()
	}
	return r.Min.String() + "-" + r.Max.String()
}

// ParseRange parses "10ms" or "5ms-15ms".
func ParseRange(s string) (Range, error) {
	s = strings.TrimSpace(s)
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := time.ParseDuration(strings.TrimSpace(lo))
	if err != nil {
		return Range{}, fmt.Errorf("%q is not a duration or a range like 5ms-15ms", s)
	}
	b := a
	if isRange {
		if b, err = time.ParseDuration(strings.TrimSpace(hi)); err != nil {
			return Range{}, fmt.Errorf("%q is not a duration or a range like 5ms-15ms", s)
		}
	}
	if a < 0 || b < a {
		return Range{}, fmt.Errorf("%q: need 0 <= min <= max", s)
	}
	return Range{a, b}, nil
}

// Validate fills defaults and names the first bad field with its value.
func (w *Config) Validate() error {
	if w.Clients == 0 {
		w.Clients = 4
	}
	if w.Clients < 1 || w.Clients > 10000 {
		return fmt.Errorf("workload.clients: %d is not in 1..10000", w.Clients)
	}
	if w.Keys == 0 {
		w.Keys = 1
	}
	if w.Keys < 1 || w.Keys > 1_000_000 {
		return fmt.Errorf("workload.keys: %d is not in 1..1000000", w.Keys)
	}
	switch w.KeyDist {
	case "":
		w.KeyDist = "uniform"
	case "uniform", "per-client":
	case "zipf":
		if w.Zipf == 0 {
			w.Zipf = 1.2
		}
		if w.Zipf <= 1 {
			return fmt.Errorf("workload.zipf: %v must be > 1", w.Zipf)
		}
	case "hot":
		if w.HotKeys == 0 {
			w.HotKeys = 1
		}
		if w.HotFraction == 0 {
			w.HotFraction = 0.8
		}
		if w.HotKeys < 1 || w.HotKeys > w.Keys {
			return fmt.Errorf("workload.hot_keys: %d is not in 1..keys (%d)", w.HotKeys, w.Keys)
		}
		if w.HotFraction <= 0 || w.HotFraction > 1 {
			return fmt.Errorf("workload.hot_fraction: %v is not in (0, 1]", w.HotFraction)
		}
	default:
		return fmt.Errorf("workload.key_dist: %q is not one of %s", w.KeyDist, strings.Join(KeyDists, ", "))
	}
	if w.Reentry < 0 || w.Reentry > 100 {
		return fmt.Errorf("workload.reentry: %d is not in 0..100", w.Reentry)
	}
	switch w.Resource {
	case "":
		w.Resource = "counter"
	case "counter", "inventory", "register":
	default:
		return fmt.Errorf("workload.resource: %q is not one of counter, inventory, register", w.Resource)
	}
	if w.Stock == 0 {
		w.Stock = 1000
	}
	if w.Stock < 0 {
		return fmt.Errorf("workload.stock: %d is negative", w.Stock)
	}
	if w.HonourLost == nil {
		t := true
		w.HonourLost = &t
	}
	switch w.Mode {
	case "":
		w.Mode = "closed"
	case "closed":
	case "open":
		if w.Rate <= 0 {
			return fmt.Errorf("workload.rate: %v must be > 0 in open mode", w.Rate)
		}
	default:
		return fmt.Errorf("workload.mode: %q is not one of closed, open", w.Mode)
	}
	if w.Stagger < 0 {
		return fmt.Errorf("workload.stagger: %v is negative", w.Stagger)
	}
	return nil
}
