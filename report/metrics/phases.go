package metrics

import (
	"time"
)

// Phases is where a run's wall time went, in milliseconds: forming the
// topology (Start), getting it ready for the workload (Ready: preflight,
// observer, clients, a worker's barrier), the workload with its faults,
// healing the faults, the recovery window, winding down (Stop: the clients'
// last cycles, the clean-up, stopping the servers, closing the history), the
// check after the run (Check: with --live only the tail) and the report
// (Report: analysis and rendering). They add up to the run's wall time
// less a few milliseconds of bookkeeping.
type Phases struct {
	Start    float64 `json:"start"`
	Ready    float64 `json:"ready"`
	Workload float64 `json:"workload"`
	Heal     float64 `json:"heal"`
	Recovery float64 `json:"recovery"`
	Stop     float64 `json:"stop"`
	Check    float64 `json:"check"`
	Report   float64 `json:"report"`
}

// PhaseNames are the phases in the order a run goes through them.
var PhaseNames = []string{"start", "ready", "workload", "heal", "recovery", "stop", "check", "report"}

// fields lists the phases' values in PhaseNames' order.
func (p *Phases) fields() []*float64 {
	return []*float64{&p.Start, &p.Ready, &p.Workload, &p.Heal, &p.Recovery, &p.Stop, &p.Check, &p.Report}
}

// Values are the phases in PhaseNames' order.
func (p Phases) Values() []float64 {
	out := make([]float64, 0, len(PhaseNames))
	for _, f := range p.fields() {
		out = append(out, *f)
	}
	return out
}

// Total is the sum of the phases.
func (p Phases) Total() float64 {
	t := 0.0
	for _, v := range p.Values() {
		t += v
	}
	return t
}

// Add adds q's phases to p's.
func (p *Phases) Add(q Phases) {
	qs := q.Values()
	for i, f := range p.fields() {
		*f += qs[i]
	}
}

// Set records d as the phase named name (one of PhaseNames).
func (p *Phases) Set(name string, d time.Duration) {
	for i, n := range PhaseNames {
		if n == name {
			*p.fields()[i] = MSOf(d)
			return
		}
	}
	panic("report: no phase " + name) // a programming error: the names are ours
}

// MSOf is d in milliseconds, to the microsecond.
func MSOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// PhaseTimer times a run's phases one after another: Mark(name) ends the
// phase named name where the previous one ended.
type PhaseTimer struct {
	P    Phases
	last time.Time
}

// NewPhaseTimer starts timing now.
func NewPhaseTimer() *PhaseTimer { return &PhaseTimer{last: time.Now()} }

// Mark ends phase name now (its time since the previous mark).
func (t *PhaseTimer) Mark(name string) {
	now := time.Now()
	t.P.Set(name, now.Sub(t.last))
	t.last = now
}

// Skip restarts the clock without recording (time that is no phase's).
func (t *PhaseTimer) Skip() { t.last = time.Now() }
