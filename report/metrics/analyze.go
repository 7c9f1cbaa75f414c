package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockchaos/lockchaos/history"
)

// Names of the latency distributions, as used in results.json's
// stats.latency_us, the .hgrm file names and thresholds.
const (
	// OpAcquire: ok outermost acquires, invoke → ack (includes waiting).
	OpAcquire = "acquire"
	// OpRelease: ok releases that freed the key (depth 0), invoke → ack.
	OpRelease = "release"
	// OpCycle: completed cycles, acquire invoke → release ack.
	OpCycle = "cycle"
	// OpHandoff: a holder's release invoke → the next ok acquire ack on the
	// same key by a client that was already waiting.
	OpHandoff = "handoff"
)

// Ops lists the latency distributions in display order.
var Ops = []string{OpAcquire, OpRelease, OpCycle, OpHandoff}

// OpPipe is a driver lock's protocol cost per request (the round trip
// less the driver's own time in it): in LatencyUS beside Ops, measured by
// the run rather than read from the history (Summarize of
// workloads.Workload.PipeCost), and kept when a saved run is checked again.
const OpPipe = "pipe"

// Histogram range: 1µs .. 60s, values recorded in nanoseconds.
const (
	histLowestNS  = 1_000
	histHighestNS = 60_000_000_000
	histSigFigs   = 3
)

// AnalyzeOptions tune Analyze. The zero value is what a run uses.
type AnalyzeOptions struct {
	// BucketNS is the initial width of a time-series bucket in ns.
	// Default 10ms. Buckets double in width whenever a run would need more
	// than MaxBuckets of them, so memory stays fixed whatever the length.
	BucketNS int64
	// MaxBuckets caps the number of time-series buckets. Default 400.
	MaxBuckets int
	// MaxSamples caps the individual operations kept (reservoir sampling,
	// every operation equally likely) for the latency-over-time plot.
	// Default 20000.
	MaxSamples int
	// Seed of the reservoir sampling: the same history and seed always
	// give the same sample. Default 1.
	Seed uint64
}

func (o AnalyzeOptions) withDefaults() AnalyzeOptions {
	if o.BucketNS <= 0 {
		o.BucketNS = 10_000_000
	}
	if o.MaxBuckets <= 1 {
		o.MaxBuckets = 400
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = 20000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Analysis is what one pass over a history yields: the numbers for
// results.json, the histograms, the time series and an operation sample for
// the plots. Its size does not depend on the history's length.
type Analysis struct {
	// HistoryPath is the analysed file (the timelines read it again, around
	// each violation only).
	HistoryPath string
	// Meta is the run event's meta (scenario, lock, seed, ttl_ms, ...).
	Meta  map[string]any
	Stats Stats
	// Faults in the order they fired, heals paired by ID.
	Faults []FaultSummary
	// Histograms per op name (Ops); values in nanoseconds.
	Histograms map[string]*hdrhistogram.Histogram
	Series     Series
	// Samples of acquires and releases (any result), sorted by T: a uniform
	// sample of SampledFrom operations.
	Samples     []Sample
	SampledFrom int64
	// Clients has one entry per client id (0..n-1).
	Clients []ClientStats
	// WorkloadNS is the workload phase [start, end] the throughput covers.
	WorkloadNS [2]int64
	// PhasesNS maps each phase name to when it began.
	PhasesNS map[string]int64
	// EndNS is the latest time seen in the history.
	EndNS int64
	// Events decoded, and whether the last line was torn (skipped).
	Events int
	Torn   bool
	// Pauses, Lost and Renews count those events (renewals by result).
	Pauses int64
	Lost   int64
	Renews Counts
}

// Series are fixed-width time buckets starting at run start (t = 0).
type Series struct {
	BucketNS int64
	// Cycles completed (by release ack) per bucket.
	Cycles []int64
	// Outermost acquires acked per bucket, by result.
	AcquireOK, AcquireFail, AcquireUnknown []int64
}

// Throughput is completed cycles per second for each bucket.
func (s Series) Throughput() []float64 {
	out := make([]float64, len(s.Cycles))
	sec := float64(s.BucketNS) / 1e9
	for i, c := range s.Cycles {
		out[i] = float64(c) / sec
	}
	return out
}

// Sample is one sampled operation.
type Sample struct {
	T         int64 // invoke, ns since run start
	LatencyNS int64
	Op        string // acquire | release
	Result    history.Result
	Client    int
}

// ClientStats are one client's numbers.
type ClientStats struct {
	Client   int    `json:"client"`
	Acquires Counts `json:"acquires"`
	Cycles   int64  `json:"cycles"`
}

type openHold struct {
	invoke, ack int64
}

type clientState struct {
	open     map[string]openHold // key → outermost ok acquire not yet released
	acquires Counts
	cycles   int64
}

type acqRec struct {
	client   int
	invoke   int64
	ack      int64
	occupied bool
}

type relRec struct {
	client int
	invoke int64
}

// keyState pairs releases with the next acquire on a key for hand-off
// latency. Events come roughly in ack order, so the acquire that follows a
// release can be appended before it (the waiter's ack can beat the
// releaser's); a few recent acquires and unmatched releases are kept.
type keyState struct {
	recent  [8]acqRec
	next    int
	pending []relRec
}

const maxPendingReleases = 8

type analyzer struct {
	o   AnalyzeOptions
	a   *Analysis
	rng *rand.Rand

	clients  map[int]*clientState
	keys     map[string]*keyState
	faultIdx map[int]int

	seen int64 // sample candidates seen (reservoir)

	workloadStart, workloadEnd int64
	haveWorkload, haveEnd      bool
	firstClientT               int64
	haveClientT                bool
	cyclesAll, cyclesWindow    int64
	releases                   Counts // outermost (depth 0) releases
	maxClient                  int
}

// Analyze streams the history at historyPath once and returns its numbers,
// histograms, series and samples. Memory stays bounded: histograms, fixed
// time buckets, a bounded sample, and per client/key state. It fails only
// when the file cannot be read or is malformed (a torn last line is fine).
func Analyze(historyPath string, o AnalyzeOptions) (*Analysis, error) {
	o = o.withDefaults()
	z := &analyzer{
		o: o,
		a: &Analysis{
			HistoryPath: historyPath,
			Histograms:  map[string]*hdrhistogram.Histogram{},
			Series:      Series{BucketNS: o.BucketNS},
			PhasesNS:    map[string]int64{},
		},
		rng:       rand.New(rand.NewPCG(o.Seed, 0x10c6c4a05)),
		clients:   map[int]*clientState{},
		keys:      map[string]*keyState{},
		faultIdx:  map[int]int{},
		maxClient: -1,
	}
	for _, op := range Ops {
		z.a.Histograms[op] = newHist()
	}
	info, err := history.ScanFile(historyPath, func(e *history.Event) error {
		z.event(e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	z.a.Events, z.a.Torn = info.Events, info.Torn
	z.finish()
	return z.a, nil
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowestNS, histHighestNS, histSigFigs)
}

func record(h *hdrhistogram.Histogram, ns int64) {
	if ns < 0 {
		ns = 0
	}
	if ns > histHighestNS {
		ns = histHighestNS
	}
	_ = h.RecordValue(ns) // in range by construction
}

func (z *analyzer) client(id int) *clientState {
	c := z.clients[id]
	if c == nil {
		c = &clientState{open: map[string]openHold{}}
		z.clients[id] = c
		if id > z.maxClient {
			z.maxClient = id
		}
	}
	return c
}

func (z *analyzer) key(k string) *keyState {
	s := z.keys[k]
	if s == nil {
		s = &keyState{}
		z.keys[k] = s
	}
	return s
}

func (z *analyzer) event(e *history.Event) {
	if e.T > z.a.EndNS {
		z.a.EndNS = e.T
	}
	if e.End > z.a.EndNS {
		z.a.EndNS = e.End
	}
	if e.Client >= 0 && e.Op != history.OpRun && (!z.haveClientT || e.T < z.firstClientT) {
		z.firstClientT, z.haveClientT = e.T, true
	}
	switch e.Op {
	case history.OpRun:
		if z.a.Meta == nil {
			z.a.Meta = e.Meta
		}
	case history.OpPhase:
		if _, ok := z.a.PhasesNS[e.Detail]; !ok {
			z.a.PhasesNS[e.Detail] = e.T
		}
		switch e.Detail {
		case "workload":
			if !z.haveWorkload {
				z.workloadStart, z.haveWorkload = e.T, true
			}
		case "heal", "recovery", "done":
			if z.haveWorkload && !z.haveEnd {
				z.workloadEnd, z.haveEnd = e.T, true
			}
		}
	case history.OpFault:
		z.fault(e)
	case history.OpHeal:
		z.heal(e)
	case history.OpAcquire:
		z.acquire(e)
	case history.OpRelease:
		z.release(e)
	case history.OpPause:
		z.a.Pauses++
	case history.OpLost:
		z.a.Lost++
	case history.OpRenew:
		z.a.Renews.add(e.Result)
	}
}

func (c *Counts) add(r history.Result) {
	switch r {
	case history.OK:
		c.OK++
	case history.Fail:
		c.Fail++
	default:
		c.Unknown++
	}
}

func (z *analyzer) fault(e *history.Event) {
	if e.Fault == nil {
		return
	}
	f := e.Fault
	z.faultIdx[f.ID] = len(z.a.Faults)
	z.a.Faults = append(z.a.Faults, FaultSummary{ID: f.ID, Kind: f.Kind, Target: f.Target, AtMS: history.MS(e.T),
		Applied: f.Applied, Request: f.Request, Effect: f.Effect})
}

func (z *analyzer) heal(e *history.Event) {
	if e.Fault == nil {
		return
	}
	i, ok := z.faultIdx[e.Fault.ID]
	if !ok {
		// A heal without its fault (the fault line was lost): keep the window.
		f := e.Fault
		z.faultIdx[f.ID] = len(z.a.Faults)
		z.a.Faults = append(z.a.Faults, FaultSummary{ID: f.ID, Kind: f.Kind, Target: f.Target, AtMS: history.MS(e.T),
			Applied: f.Applied, Request: f.Request})
		i = len(z.a.Faults) - 1
	}
	fs := &z.a.Faults[i]
	fs.HealedMS = history.MS(e.T)
	fs.HealEffect = e.Fault.Effect
}

// bucket returns the series index for time t, widening buckets when needed.
func (z *analyzer) bucket(t int64) int {
	if t < 0 {
		t = 0
	}
	s := &z.a.Series
	i := int(t / s.BucketNS)
	for i >= z.o.MaxBuckets {
		halve := func(v []int64) []int64 {
			out := make([]int64, (len(v)+1)/2, z.o.MaxBuckets)
			for j, x := range v {
				out[j/2] += x
			}
			return out
		}
		s.Cycles = halve(s.Cycles)
		s.AcquireOK = halve(s.AcquireOK)
		s.AcquireFail = halve(s.AcquireFail)
		s.AcquireUnknown = halve(s.AcquireUnknown)
		s.BucketNS *= 2
		i = int(t / s.BucketNS)
	}
	for len(s.Cycles) <= i {
		s.Cycles = append(s.Cycles, 0)
		s.AcquireOK = append(s.AcquireOK, 0)
		s.AcquireFail = append(s.AcquireFail, 0)
		s.AcquireUnknown = append(s.AcquireUnknown, 0)
	}
	return i
}

func (z *analyzer) sample(e *history.Event, op string) {
	if e.End <= 0 || e.End < e.T {
		return // never acked: no latency to show
	}
	s := Sample{T: e.T, LatencyNS: e.End - e.T, Op: op, Result: e.Result, Client: e.Client}
	z.seen++
	if len(z.a.Samples) < z.o.MaxSamples {
		z.a.Samples = append(z.a.Samples, s)
		return
	}
	if j := z.rng.Int64N(z.seen); j < int64(z.o.MaxSamples) {
		z.a.Samples[j] = s
	}
}

func (z *analyzer) acquire(e *history.Event) {
	if e.Client < 0 {
		return
	}
	if e.Result == history.OK && e.Depth > 1 {
		return // reentrant nested acquire: not a separate cycle
	}
	c := z.client(e.Client)
	c.acquires.add(e.Result)
	z.sample(e, OpAcquire)
	at := e.End
	if at <= 0 {
		at = e.T
	}
	b := z.bucket(at)
	switch e.Result {
	case history.OK:
		z.a.Series.AcquireOK[b]++
	case history.Fail:
		z.a.Series.AcquireFail[b]++
	default:
		z.a.Series.AcquireUnknown[b]++
	}
	if e.Result != history.OK {
		return
	}
	record(z.a.Histograms[OpAcquire], e.End-e.T)
	c.open[e.Key] = openHold{invoke: e.T, ack: e.End}

	// Hand-off: the first ok acquire on the key after a pending release.
	ks := z.key(e.Key)
	a := acqRec{client: e.Client, invoke: e.T, ack: e.End, occupied: true}
	keep := ks.pending[:0]
	for _, r := range ks.pending {
		if e.End > r.invoke {
			z.handoff(r, a)
			continue
		}
		keep = append(keep, r)
	}
	ks.pending = keep
	ks.recent[ks.next] = a
	ks.next = (ks.next + 1) % len(ks.recent)
}

func (z *analyzer) handoff(r relRec, a acqRec) {
	if a.client != r.client && a.invoke < r.invoke {
		record(z.a.Histograms[OpHandoff], a.ack-r.invoke)
	}
}

func (z *analyzer) release(e *history.Event) {
	if e.Client < 0 {
		return
	}
	if e.Depth > 0 {
		return // reentrant inner release: the key stays held
	}
	c := z.client(e.Client)
	z.releases.add(e.Result)
	done := e.End
	if done <= 0 {
		done = e.T
	}
	if e.Result == history.OK && e.End >= e.T && e.End > 0 {
		record(z.a.Histograms[OpRelease], e.End-e.T)
	}
	z.sample(e, OpRelease)
	h, ok := c.open[e.Key]
	if !ok {
		return // a release without a held acquire: not a cycle
	}
	delete(c.open, e.Key)
	c.cycles++
	z.cyclesAll++
	z.a.Series.Cycles[z.bucket(done)]++
	record(z.a.Histograms[OpCycle], done-h.invoke)
	if z.haveWorkload && done >= z.workloadStart && (!z.haveEnd || done <= z.workloadEnd) {
		z.cyclesWindow++
	}

	ks := z.key(e.Key)
	r := relRec{client: e.Client, invoke: e.T}
	var first *acqRec
	for i := range ks.recent {
		a := &ks.recent[i]
		if a.occupied && a.ack > r.invoke && (first == nil || a.ack < first.ack) {
			first = a
		}
	}
	if first != nil {
		z.handoff(r, *first)
		return
	}
	if len(ks.pending) >= maxPendingReleases {
		ks.pending = ks.pending[1:]
	}
	ks.pending = append(ks.pending, r)
}

func (z *analyzer) finish() {
	a := z.a
	sort.Slice(a.Samples, func(i, j int) bool { return a.Samples[i].T < a.Samples[j].T })
	a.SampledFrom = z.seen

	start, end := z.workloadStart, z.workloadEnd
	cycles := z.cyclesWindow
	if !z.haveWorkload {
		start, cycles = z.firstClientT, z.cyclesAll
	}
	if !z.haveEnd {
		end = a.EndNS
	}
	a.WorkloadNS = [2]int64{start, end}

	n := z.maxClient + 1
	if m, ok := MetaInt(a.Meta, history.MetaClients); ok && m > n {
		n = m
	}
	a.Clients = make([]ClientStats, n)
	perClient := make([]int64, n)
	var total Counts
	for id := range a.Clients {
		a.Clients[id].Client = id
		if c := z.clients[id]; c != nil {
			a.Clients[id].Acquires, a.Clients[id].Cycles = c.acquires, c.cycles
			perClient[id] = c.acquires.OK
			total.OK += c.acquires.OK
			total.Fail += c.acquires.Fail
			total.Unknown += c.acquires.Unknown
		}
	}
	st := Stats{
		Cycles:         z.cyclesAll,
		WorkloadCycles: cycles,
		WorkloadS:      float64(end-start) / 1e9,
		Acquires:       total,
		Releases:       z.releases,
		LatencyUS:      map[string]Latency{},
		Fairness:       Jain(perClient),
		PerClient:      perClient,
		Pauses:         a.Pauses,
		Lost:           a.Lost,
	}
	if st.WorkloadS > 0 {
		st.Throughput = float64(cycles) / st.WorkloadS
	}
	for _, op := range Ops {
		st.LatencyUS[op] = Summarize(a.Histograms[op])
	}
	a.Stats = st
}

// Summarize turns a histogram (ns) into the results.json latency summary (µs):
// the analysis's operations, and a driver lock's pipe cost (OpPipe).
func Summarize(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	us := func(v int64) float64 { return float64(v) / 1e3 }
	return Latency{
		Count: h.TotalCount(),
		Mean:  round3(h.Mean() / 1e3),
		P50:   us(h.ValueAtQuantile(50)),
		P90:   us(h.ValueAtQuantile(90)),
		P99:   us(h.ValueAtQuantile(99)),
		P999:  us(h.ValueAtQuantile(99.9)),
		Max:   us(h.Max()),
	}
}

func round3(v float64) float64 { return math.Round(v*1e3) / 1e3 }

// Jain is Jain's fairness index (Σx)² / (n·Σx²) over per-client counts:
// 1 when every client got the same share, 1/n when one got everything.
// It is 0 when nobody got anything.
func Jain(xs []int64) float64 {
	var sum, sq float64
	for _, x := range xs {
		f := float64(x)
		sum += f
		sq += f * f
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// MetaInt reads an integer from a run event's meta (JSON numbers decode as
// float64).
func MetaInt(m map[string]any, k string) (int, bool) {
	switch v := m[k].(type) {
	case float64:
		return int(v), true
	case int:
		return v, true
	case int64:
		return int(v), true
	case uint64:
		return int(v), true
	}
	return 0, false
}

// MetaString reads a meta value as text.
func MetaString(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok || v == nil {
		return ""
	}
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprint(v)
}
