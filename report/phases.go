package report

import (
	"fmt"
	"strings"
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

// phasesTable renders, per scenario, the cells' summed phase times (seconds)
// and their share of the cells' total time.
func phasesTable(b *strings.Builder, m *Matrix) {
	type row struct {
		name  string
		cells int
		p     Phases
	}
	var rows []*row
	byName := map[string]*row{}
	var all Phases
	for _, c := range m.Cells {
		if c.Phases == nil {
			continue
		}
		r := byName[c.Scenario]
		if r == nil {
			r = &row{name: c.Scenario}
			byName[c.Scenario] = r
			rows = append(rows, r)
		}
		r.cells += max(1, len(c.Seeds))
		r.p.Add(*c.Phases)
		all.Add(*c.Phases)
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Where the time went\n\n")
	if m.WallMS > 0 {
		fmt.Fprintf(b, "Wall time %.0f s with up to %d cells at once; the cells' own times add up to %.0f s (%.1f× the wall time).\n\n",
			m.WallMS/1000, max(m.Parallel, 1), all.Total()/1000, all.Total()/m.WallMS)
	}
	b.WriteString("Seconds summed over each scenario's cells (and seeds), by phase of the run.\n\n| scenario | runs | total |")
	for _, n := range PhaseNames {
		b.WriteString(" " + n + " |")
	}
	b.WriteString("\n|---|---:|---:|")
	for range PhaseNames {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	line := func(name string, runs int, p Phases) {
		fmt.Fprintf(b, "| %s | %d | %.1f |", name, runs, p.Total()/1000)
		for _, v := range p.Values() {
			fmt.Fprintf(b, " %.1f |", v/1000)
		}
		b.WriteString("\n")
	}
	runs := 0
	for _, r := range rows {
		line(r.name, r.cells, r.p)
		runs += r.cells
	}
	line("**all**", runs, all)
}
