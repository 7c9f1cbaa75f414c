package explore

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// Template is a one-fault schedule whose magnitude a margin bisects.
type Template struct {
	Name   string // "pause-client@before-write"
	Family string
	Fault  Fault
	// Unit of the magnitude: UnitTTL (a time, ×TTL; the default) or
	// UnitRate (a clock's rate, MagRate).
	Unit string
	// Lo and Hi bound the magnitudes searched (default MinMag, MaxMag).
	Lo, Hi float64
	// Falling: the unsafe direction is downward (a client clock running
	// slow): the margin is the largest failing value, the lock failing at
	// it and below.
	Falling bool
	// WorkHold is the workload's hold (×TTL) when not the short default:
	// a clock's rate only matters while a client holds the lock.
	WorkHold float64
	// HoldMag: the magnitude is the workload's hold (×TTL) and the
	// template has no fault (Fault is zero): how long a lock can be held
	// before it is lost, over renewal cycles for a renewing lock.
	HoldMag bool
}

// HoldTemplate is the margin of the hold's length: three clients on one
// key, each holding m×TTL, no fault. A lock without renewal is lost from a
// hold of about 1×TTL, its design; a renewing one should never be, and one
// that loses a little of its lease at each renewal is lost some cycles in.
const HoldTemplate = "hold"

// Margin units.
const (
	UnitTTL  = "×TTL"
	UnitRate = "rate"
)

// Range is the template's searched range.
func (t Template) Range() (lo, hi float64) {
	if t.Hi == 0 {
		return MinMag, MaxMag
	}
	return t.Lo, t.Hi
}

// unit is the template's unit, UnitTTL by default.
func (t Template) unit() string {
	if t.Unit == "" {
		return UnitTTL
	}
	return t.Unit
}

// Templates are the margin templates of a topology: per fault family that
// applies, the fault whose size is a time (×TTL) — a client pause at each
// cycle point, command stalls, link and node delays, cuts, node freezes and
// losses, clock jumps and skews.
func Templates(topology string) []Template {
	kinds := Applicable(topology)
	return slices.DeleteFunc(allTemplates(), func(t Template) bool { return !t.HoldMag && !slices.Contains(kinds, t.Fault.Spec.Kind) })
}

// allTemplates are the margin templates of every topology; each names a
// kind explore draws (TestMarginTemplatesAreExplored).
func allTemplates() []Template {
	var out []Template
	add := func(name string, f Fault) {
		out = append(out, Template{Name: name, Family: history.FaultFamily(f.Spec.Kind), Fault: f})
	}
	for _, p := range history.Points {
		add("pause-client@"+p, Fault{Spec: faults.Spec{Kind: history.FaultPauseClient, Target: "any-client", Point: p}, MagField: MagDuration})
	}
	add("stall-commands", Fault{Spec: faults.Spec{Kind: history.FaultStallCommands, Target: "holder"}, MagField: MagDelay, Hold: 3})
	add("link-delay(to-node)", Fault{Spec: faults.Spec{Kind: history.FaultLink, Target: "holder -> master",
		Params: map[string]string{history.ParamMode: "delay", history.ParamDirection: "to-node"}}, MagField: MagDelay, Hold: 3})
	add("latency(from-node)", Fault{Spec: faults.Spec{Kind: history.FaultLatency, Target: "all",
		Params: map[string]string{history.ParamDirection: "from-node"}}, MagField: MagLatency, Hold: 3})
	add("cut-client(drop)", Fault{Spec: faults.Spec{Kind: history.FaultCutClient, Target: "holder",
		Params: map[string]string{history.ParamMode: "drop"}}, MagField: MagDuration})
	add("partition(drop)", Fault{Spec: faults.Spec{Kind: history.FaultPartition, Target: "all",
		Params: map[string]string{history.ParamMode: "drop"}}, MagField: MagDuration})
	add("pause-node", Fault{Spec: faults.Spec{Kind: history.FaultPauseNode, Target: "all"}, MagField: MagDuration})
	add("kill-node", Fault{Spec: faults.Spec{Kind: history.FaultKillNode, Target: "all", When: "any-client after-acquire"}, MagField: MagDuration})
	add("clock-jump(forward)", Fault{Spec: faults.Spec{Kind: history.FaultClockJump, Target: "all", When: "any-client after-acquire"}, MagField: MagDelta})
	add("clock-skew(back)", Fault{Spec: faults.Spec{Kind: history.FaultClockSkew, Target: "holder"}, MagField: MagOffset, Hold: 3})
	add("replication-lag", Fault{Spec: faults.Spec{Kind: history.FaultReplicationLag, Target: "all"}, MagField: MagLatency, Hold: 3})
	// Rates. A holder's clock running slow lets it believe in its lease
	// past the key's expiry (a hold of 1.2×TTL, which a true clock gives
	// up, is kept when rate×1.2 < 1) and stretches a watchdog's renewal
	// interval; running fast only makes a client give up early, so the
	// client's template searches downward. A node's clock running fast
	// expires the key early: a hold of 0.5×TTL outlives the key from a
	// rate of 2 (a hold closer to the TTL leaves a margin of milliseconds,
	// which a loaded machine's scheduling delays cross at any rate).
	rate := func(name string, f Fault, lo, hi float64, falling bool, hold float64) {
		out = append(out, Template{Name: name, Family: history.FaultFamily(f.Spec.Kind), Fault: f, Unit: UnitRate,
			Lo: lo, Hi: hi, Falling: falling, WorkHold: hold})
	}
	rate("clock-skew-rate(slow)", Fault{Spec: faults.Spec{Kind: history.FaultClockSkew, Target: "holder"}, MagField: MagRate, Hold: 3},
		0.1, 0.95, true, 1.2)
	rate("clock-drift(fast)", Fault{Spec: faults.Spec{Kind: history.FaultClockDrift, Target: "all"}, MagField: MagRate, Hold: 3},
		1.05, 3, false, 0.5)
	// Up to 6×TTL: a watchdog renewing at a third of the TTL is six
	// renewals in, twice the cycles explore's longest holds reach.
	out = append(out, Template{Name: HoldTemplate, Family: "none", HoldMag: true, Lo: 0.5, Hi: 6})
	return out
}

// MarginSchedule is template t at magnitude m (in its unit): three
// clients on one key, a short hold (or the template's), the fault firing
// once after the start.
func MarginSchedule(t Template, m float64, ttl time.Duration, topology string, nodes int) Schedule {
	if t.HoldMag {
		// The first holder's whole hold, with the other two waiting for
		// the key (one taking it while the holder still believes in its
		// lease is what fails), then a TTL of room.
		hold := magDuration(m, ttl)
		return Schedule{Topology: topology, Nodes: nodes, TTL: ttl, Clients: 3, Keys: 1, Hold: hold,
			Think: 2 * time.Millisecond, Resource: "counter", Duration: (hold + ttl + 300*time.Millisecond).Round(100 * time.Millisecond),
			Recovery: recoveryFor(ttl)}
	}
	f := t.Fault
	f.Spec.Params = cloneParams(f.Spec.Params)
	f.Mag = m
	if t.Name == "clock-skew(back)" {
		f.Mag = -m
	}
	f.Spec.At = 300 * time.Millisecond
	s := Schedule{Topology: topology, Nodes: nodes, TTL: ttl, Clients: 3, Keys: 1, Hold: 2 * time.Millisecond,
		Think: 2 * time.Millisecond, Resource: "counter", Faults: []Fault{f}}
	if t.WorkHold > 0 {
		s.Hold = magDuration(t.WorkHold, ttl)
	}
	FitDuration(&s, s.End())
	return s
}

func cloneParams(p map[string]string) map[string]string {
	if p == nil {
		return nil
	}
	c := make(map[string]string, len(p))
	for k, v := range p {
		c[k] = v
	}
	return c
}

// safetyChecks are the checks a margin watches: liveness is left out (a
// node down longer than the TTL blocks every lock), and so is mutex for a
// fenced lock (its fence makes an overlap of beliefs harmless: the
// resource check says whether it did).
var safetyChecks = []string{checker.CheckMutex, checker.CheckResource, checker.CheckFencing, checker.CheckUnlock, checker.CheckReentrancy}

// Margin is one template's smallest failing magnitude for the lock and its
// reference (in Unit; Never when it passed over the whole range), or the
// largest for a Falling template.
type Margin struct {
	Template string  `json:"template"`
	Family   string  `json:"family"`
	Lock     float64 `json:"lock"`
	Ref      float64 `json:"reference"`
	// Unit is UnitTTL or UnitRate; Range the magnitudes searched.
	Unit    string     `json:"unit"`
	Range   [2]float64 `json:"range"`
	Falling bool       `json:"falling,omitempty"`
	// LockChecks and RefChecks are the checks that failed at the boundary.
	LockChecks []string `json:"lock_checks,omitempty"`
	RefChecks  []string `json:"reference_checks,omitempty"`
	// Untried counts bisection steps whose fault did not take effect.
	Untried int `json:"untried,omitempty"`
}

// Never is a margin that did not fail up to MaxMag.
const Never = -1

// Text is one margin's entry: "pause-client@before-write: simple
// fails from 1.00×TTL, fenced never (≤3×TTL)"; a rate's "clock-skew-
// rate(slow): simple fails at rate ≤0.82, fenced never (rate ≥0.1)".
func (m Margin) Text(lock, ref string) string {
	lo, hi := m.Range[0], m.Range[1]
	if hi == 0 {
		lo, hi = MinMag, MaxMag
	}
	w := func(x float64) string {
		switch {
		case m.Unit == UnitRate && m.Falling && x == Never:
			return fmt.Sprintf("never (rate ≥%g)", lo)
		case m.Unit == UnitRate && m.Falling && x >= hi:
			return fmt.Sprintf("from rate %g (the mildest searched)", hi)
		case m.Unit == UnitRate && m.Falling:
			return fmt.Sprintf("at rate ≤%.2f", x)
		case m.Unit == UnitRate && x == Never:
			return fmt.Sprintf("never (rate ≤%g)", hi)
		case m.Unit == UnitRate && x <= lo:
			return fmt.Sprintf("from rate %g (the mildest searched)", lo)
		case m.Unit == UnitRate:
			return fmt.Sprintf("at rate ≥%.2f", x)
		case x == Never:
			return fmt.Sprintf("never (≤%g×TTL)", hi)
		case x <= lo:
			return fmt.Sprintf("from ≤%g×TTL", lo)
		}
		return fmt.Sprintf("from %.2f×TTL", x)
	}
	s := fmt.Sprintf("%s: %s fails %s", m.Template, lock, w(m.Lock))
	if len(m.LockChecks) > 0 {
		s += " (" + strings.Join(m.LockChecks, ",") + ")"
	}
	if ref != lock {
		s += fmt.Sprintf(", %s %s", ref, w(m.Ref))
		if len(m.RefChecks) > 0 {
			s += " (" + strings.Join(m.RefChecks, ",") + ")"
		}
	}
	return s
}

// Margins bisects each template (all when filter is "", else those whose
// name contains it) for the lock and its reference side by side, seeds
// runs a step (a magnitude fails when any seed fails a safety check).
func (e *Explorer) Margins(ctx context.Context, seeds int, filter string, onMargin func(Margin)) ([]Margin, error) {
	ctx, cancel, err := e.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var out []Margin
	for _, t := range Templates(e.cfg.Topology) {
		if filter != "" && !strings.Contains(t.Name, filter) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		lo, hi := t.Range()
		m := Margin{Template: t.Name, Family: t.Family, Unit: t.unit(), Range: [2]float64{lo, hi}, Falling: t.Falling}
		// The bisection looks for the smallest failing x: a falling
		// template's x is the distance below 1 (rate = 1-x).
		blo, bhi, value := lo, hi, func(x float64) float64 { return x }
		if t.Falling {
			blo, bhi, value = 1-hi, 1-lo, func(x float64) float64 { return 1 - x }
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		type side struct {
			lock string
			at   *float64
			cs   *[]string
		}
		sides := []side{{e.cfg.Lock, &m.Lock, &m.LockChecks}}
		if e.cfg.Reference != e.cfg.Lock {
			sides = append(sides, side{e.cfg.Reference, &m.Ref, &m.RefChecks})
		}
		for _, side := range sides {
			wg.Add(1)
			go func() {
				defer wg.Done()
				info, _, _ := lockimpl.Lookup(side.lock)
				fails := func(x float64) (bool, []string) {
					s := MarginSchedule(t, value(x), e.cfg.TTL, e.cfg.Topology, e.cfg.Nodes)
					if info.Fenced {
						s.Resource = "register" // the resource that checks the fence
					}
					for seed := uint64(1); seed <= uint64(seeds); seed++ {
						dir := e.dir("margin", fmt.Sprintf("%s-%s-%.3f-%d", t.Name, side.lock, value(x), seed))
						r := e.run(ctx, s, side.lock, seed, filepath.Clean(dir))
						e.drop(r)
						if r.Err != nil {
							continue
						}
						var bad []string
						for _, c := range safetyChecks {
							// A fenced lock's holders may overlap in belief:
							// the fence keeps the resource safe.
							if r.Checks[c] == "invalid" && !(info.Fenced && c == checker.CheckMutex) {
								bad = append(bad, c)
							}
						}
						if len(bad) > 0 {
							return true, bad
						}
						if !r.Tried {
							mu.Lock()
							m.Untried++
							mu.Unlock()
						}
					}
					return false, nil
				}
				x, cs := Bisect(ctx, blo, bhi, fails)
				if x != Never {
					x = math.Round(value(x)*1000) / 1000
				}
				*side.at, *side.cs = x, cs
			}()
		}
		wg.Wait()
		if e.cfg.Reference == e.cfg.Lock {
			m.Ref, m.RefChecks = m.Lock, m.LockChecks
		}
		if ctx.Err() != nil {
			break
		}
		out = append(out, m)
		if onMargin != nil {
			onMargin(m)
		}
	}
	done := ctx.Err() == nil
	_ = writeJSON(filepath.Join(e.cfg.Out, "margins.json"), out)
	return out, e.writeMargins(out, done)
}

// Bisect finds the smallest x in [lo, hi] at which fails holds, to
// Precision, assuming it is monotone: Never when fails(hi) does not hold,
// lo when fails(lo) does. It returns the checks that failed there.
func Bisect(ctx context.Context, lo, hi float64, fails func(float64) (bool, []string)) (float64, []string) {
	ok, cs := fails(hi)
	if !ok {
		return Never, nil
	}
	if ok, c := fails(lo); ok {
		return lo, c
	}
	for hi-lo > Precision && ctx.Err() == nil {
		mid := (lo + hi) / 2
		if ok, c := fails(mid); ok {
			hi, cs = mid, c
		} else {
			lo = mid
		}
	}
	return hi, cs
}
