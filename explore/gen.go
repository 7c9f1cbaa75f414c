package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// Generator draws schedules from the whole fault vocabulary, as far as a
// lock's topology and capabilities allow. Schedule i of a generator with
// seed S is the same on every machine (determinism per seed).
type Generator struct {
	Seed     uint64
	Topology string
	// Nodes of the topology (independent: masters); 0 for its default.
	Nodes int
	TTL   time.Duration
	Info  lockimpl.Info
	// MaxFaults is the most faults of one schedule (1..3). Default 3.
	MaxFaults int
	// Kinds, when set, restricts the kinds drawn (--kinds).
	Kinds []string
}

// pointPrior weighs the cycle points of a client fault: the ones around
// the write and the release come up most.
var pointPrior = map[string]int{
	history.PointNow: 1, history.PointBeforeAcquire: 1, history.PointInAcquire: 3, history.PointAfterAcquire: 2,
	history.PointBeforeWrite: 4, history.PointInWrite: 2, history.PointBeforeRelease: 4, history.PointInRelease: 4,
	history.PointAfterRelease: 1,
}

// magLadder are the time magnitudes drawn (×TTL, 0.1–3), weighted toward
// the TTL, where expiry races live.
var (
	magLadder  = []float64{0.1, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3}
	magWeights = []int{1, 1, 2, 2, 3, 3, 3, 3, 2, 2}
	rates      = []float64{0.5, 1.5, 2, 3}
)

// holdLadder are the holds drawn (×TTL). A lock that renews its lease is
// also held for several renewal cycles (up to 4×TTL): a renewal that loses
// a little of the lease each time fails only two or more cycles in, and a
// hold within one TTL never gets there. The ladder has as many rungs either
// way, so a lock that does not renew draws the schedules it drew before.
func holdLadder(info lockimpl.Info) []float64 {
	if info.Renews {
		return []float64{0.05, 0.3, 0.6, 1.2, 2.5, 4}
	}
	return []float64{0.01, 0.05, 0.1, 0.3, 0.6, 1.2}
}

// MinMag and MaxMag bound the time magnitudes (×TTL).
const (
	MinMag = 0.1
	MaxMag = 3.0
)

// Applicable lists the fault kinds of the vocabulary that can run in
// topology (sorted by name).
func Applicable(topology string) []string {
	var out []string
	for _, k := range faults.Kinds() {
		if len(k.Topologies) > 0 && !slices.Contains(k.Topologies, topology) {
			continue
		}
		if _, ok := kindDraws[k.Name]; !ok {
			continue // unexplored (kinds.go says why)
		}
		out = append(out, k.Name)
	}
	return out
}

// Generate returns schedule i: valid for the topology (its scenario
// validates), or an error after many draws that were not.
func (g Generator) Generate(i int) (Schedule, error) {
	r := rand.New(rand.NewPCG(g.Seed, uint64(i)+1))
	var last error
	for try := 0; try < 50; try++ {
		s := g.draw(r)
		if _, err := s.Scenario("explore"); err != nil {
			last = err
			continue
		}
		return s, nil
	}
	return Schedule{}, fmt.Errorf("explore: no valid schedule in 50 draws: %v", last)
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func weighted(r *rand.Rand, w []int) int {
	t := 0
	for _, x := range w {
		t += x
	}
	n := r.IntN(t)
	for i, x := range w {
		if n < x {
			return i
		}
		n -= x
	}
	return len(w) - 1
}

func pickWeighted(r *rand.Rand, prior map[string]int, names []string) string {
	w := make([]int, len(names))
	for i, n := range names {
		w[i] = max(prior[n], 1)
	}
	return names[weighted(r, w)]
}

func (g Generator) kinds() []string {
	ks := Applicable(g.Topology)
	p, driver := lockimpl.ProcessNeedsOf(g.Info.Name)
	ks = slices.DeleteFunc(ks, func(k string) bool {
		switch k {
		case history.FaultCancel:
			// A driver without the protocol's cancel extension: every
			// such fault would report itself not applied.
			return driver && p.Cancel() != nil
		case history.FaultThrow:
			return driver && p.Extension("throw") != nil
		case history.FaultSigterm:
			// A Go lock has no process of its own to stop.
			return !driver
		}
		return false
	})
	if len(g.Kinds) > 0 {
		ks = slices.DeleteFunc(ks, func(k string) bool { return !slices.Contains(g.Kinds, k) })
	}
	return ks
}

func (g Generator) draw(r *rand.Rand) Schedule {
	ttl := g.TTL
	if ttl == 0 {
		ttl = 200 * time.Millisecond
	}
	s := Schedule{Topology: g.Topology, Nodes: g.Nodes, TTL: ttl, Resource: "counter"}
	s.Clients = []int{2, 3, 3, 4}[r.IntN(4)]
	s.Keys = 1
	if r.IntN(5) == 0 {
		s.Keys = 2
	}
	s.Hold = magDuration(pick(r, holdLadder(g.Info)), ttl)
	s.Think = pick(r, []time.Duration{2 * time.Millisecond, 10 * time.Millisecond, ttl / 5})
	if g.Info.Reentrant && r.IntN(2) == 0 {
		s.Reentry = 1 + r.IntN(2)
	}
	if g.Info.Fenced && r.IntN(3) == 0 {
		s.Resource = "register"
	}
	s.API = g.drawAPI(r)
	s.Tasks = g.drawTasks(r)
	maxF := g.MaxFaults
	if maxF <= 0 || maxF > 3 {
		maxF = 3
	}
	n := 1 + weighted(r, []int{6, 3, 1}[:maxF])
	ks := g.kinds()
	if s.Tasks > 1 {
		// A fault on a client's process would hit every client in it:
		// refused for clients that share processes (runner).
		ks = slices.DeleteFunc(ks, func(k string) bool { return slices.Contains(history.ClientProcessKinds, k) })
	}
	for range n {
		s.Faults = append(s.Faults, g.fault(r, pickWeighted(r, kindPrior, ks), s))
	}
	fit(&s, r)
	return s
}

// hasAPIs: the lock is a driver lock with more than one API mode.
func (g Generator) hasAPIs() bool {
	p, driver := lockimpl.ProcessNeedsOf(g.Info.Name)
	return driver && len(p.APIModes()) > 1
}

// hasTasks: the lock is a driver lock whose clients can share a process.
func (g Generator) hasTasks() bool {
	p, driver := lockimpl.ProcessNeedsOf(g.Info.Name)
	return driver && p.Extension("tasks") == nil
}

// drawAPI draws the library idiom a driver lock is called in: its default
// (the README's first, "") half the time, else one of its other API modes
// (its lock file's apis); "" for a lock with one way in.
func (g Generator) drawAPI(r *rand.Rand) string {
	p, driver := lockimpl.ProcessNeedsOf(g.Info.Name)
	if !driver {
		return ""
	}
	apis := p.APIModes()
	if len(apis) < 2 || r.IntN(2) == 0 {
		return ""
	}
	return pick(r, apis[1:])
}

// drawTasks draws how many clients share a driver process: a quarter of
// the schedules of a driver with the tasks extension, 2 or 4 (0 otherwise:
// a process a client).
func (g Generator) drawTasks(r *rand.Rand) int {
	if !g.hasTasks() || r.IntN(4) != 0 {
		return 0
	}
	return pick(r, []int{2, 4})
}

// drawRenewal times a fault by a renewing lock's renewals: just after the
// 1st to 3rd renewal of a hold, or just before the next one (9/10 of the
// renew interval, TTL/3, after it): a renewal that loses a little of the
// lease each time fails only cycles in, and a fault between two renewals
// meets a different lease than one across one.
func (g Generator) drawRenewal(r *rand.Rand, ttl time.Duration) string {
	w := "renewal " + strconv.Itoa(1+r.IntN(3))
	if r.IntN(2) == 0 {
		w += " +" + (ttl * 3 / 10).Round(time.Millisecond).String()
	}
	return w
}

func drawMag(r *rand.Rand) float64 { return magLadder[weighted(r, magWeights)] }

func drawPoint(r *rand.Rand, now bool) string {
	ps := slices.Clone(history.Points)
	if now {
		ps = append(ps, history.PointNow)
	}
	return pickWeighted(r, pointPrior, ps)
}

func (g Generator) clientTarget(r *rand.Rand, s Schedule) string {
	switch r.IntN(4) {
	case 0, 1:
		return "holder"
	case 2:
		return "random-client"
	}
	return "client:" + strconv.Itoa(r.IntN(s.Clients))
}

func (g Generator) nodeTarget(r *rand.Rand) string {
	switch g.Topology {
	case "independent":
		n := g.Nodes
		if n == 0 {
			n = 5
		}
		return pick(r, []string{"node:" + strconv.Itoa(1+r.IntN(n)), "minority", "majority", "all", "random-node"})
	case "sentinel":
		return pick(r, []string{"master", "master", "replica", "all"})
	}
	return pick(r, []string{"master", "master", "all"})
}

func (g Generator) fault(r *rand.Rand, kind string, s Schedule) Fault {
	f := Fault{Spec: faults.Spec{Kind: kind, Params: map[string]string{}}}
	d := kindDraws[kind]
	d.draw(g, r, s, &f)
	nonPoint := !d.atPoint
	if len(f.Spec.Params) == 0 {
		f.Spec.Params = nil
	}
	// A `when:` trigger: hold the firing until a client reaches a point
	// (a node restarted while client 0 holds).
	if (nonPoint && r.IntN(5) < 2) || (!nonPoint && r.IntN(10) == 0) {
		who := "any-client"
		if r.IntN(3) == 0 {
			who = "client:0"
		}
		f.Spec.When = who + " " + drawPoint(r, false)
		if g.Info.Renews && nonPoint && r.IntN(2) == 0 {
			f.Spec.When = who + " " + g.drawRenewal(r, s.TTL)
		}
	}
	return f
}

func (g Generator) someNodes(r *rand.Rand) string {
	n := g.Nodes
	if n == 0 {
		n = 5
	}
	k := 1 + r.IntN(max(n/2, 1))
	idx := r.Perm(n)[:k]
	slices.Sort(idx)
	parts := make([]string, k)
	for i, x := range idx {
		parts[i] = strconv.Itoa(x + 1)
	}
	return strings.Join(parts, ",")
}

// length is how long a fault lasts (its duration).
func (f Fault) length(ttl time.Duration) time.Duration { return f.SpecFor(ttl).Duration }

// fit places the faults in time (at, repeats) and sizes the run around
// them: 1–3 s of workload, a short recovery.
func fit(s *Schedule, r *rand.Rand) {
	end := time.Duration(0)
	for i := range s.Faults {
		f := &s.Faults[i]
		f.Spec.At = time.Duration(150+r.IntN(350)) * time.Millisecond
		l := f.length(s.TTL)
		if r.IntN(3) == 0 {
			f.Spec.Count = 2 + r.IntN(2)
			f.Spec.Every = (l + s.TTL + time.Duration(r.IntN(200))*time.Millisecond).Round(10 * time.Millisecond)
		}
		last := f.Spec.At + time.Duration(max(f.Spec.Count, 1)-1)*f.Spec.Every + l
		if f.Spec.When != "" {
			last += s.TTL // room for the trigger to come
		}
		end = max(end, last)
	}
	FitDuration(s, end)
}

// FitDuration sets the run's length: the workload phase covers every
// firing and its effect plus a margin (1–3 s), the recovery 2×TTL (at
// least 400ms: enough for liveness to see the lock taken again), and
// repeats that do not fit are cut.
func FitDuration(s *Schedule, end time.Duration) {
	d := min(max(end+300*time.Millisecond, time.Second), 3*time.Second).Round(100 * time.Millisecond)
	s.Duration = d
	s.Recovery = recoveryFor(s.TTL)
	for i := range s.Faults {
		f := &s.Faults[i]
		l := f.length(s.TTL)
		limit := d
		if f.Spec.Kind == history.FaultPauseClient {
			limit = d + s.Recovery
		}
		for f.Spec.Count > 1 && f.Spec.At+time.Duration(f.Spec.Count-1)*f.Spec.Every+l > limit {
			f.Spec.Count--
		}
		if f.Spec.Count <= 1 {
			f.Spec.Count, f.Spec.Every = 0, 0
		}
		if f.Spec.At+l > limit {
			f.Spec.At = max(limit-l-50*time.Millisecond, 0)
		}
	}
}

// recoveryFor is a schedule's recovery window: 2×TTL, at least 400ms
// (enough for liveness to see the lock taken again).
func recoveryFor(ttl time.Duration) time.Duration { return max(2*ttl, 400*time.Millisecond) }

// End is when the schedule's last effect ends (for FitDuration).
func (s Schedule) End() time.Duration {
	end := time.Duration(0)
	for _, f := range s.Faults {
		last := f.Spec.At + time.Duration(max(f.Spec.Count, 1)-1)*f.Spec.Every + f.length(s.TTL)
		if f.Spec.When != "" {
			last += s.TTL
		}
		end = max(end, last)
	}
	return end
}
