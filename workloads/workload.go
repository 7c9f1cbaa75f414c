// Package workloads runs the clients: each with its own Locker, in a loop of
// acquire → critical section on a protected resource → release → think, with
// every operation appended to the history. It offers the faults package the
// client controls (pause, crash, clock skew, command stalls, cuts) and knows
// nothing of which fault is running.
package workloads

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// Options build a Workload.
type Options struct {
	Config      Config
	Lock        string
	LockOptions lockimpl.Options
	Cluster     *cluster.Cluster
	Rec         *history.Recorder
	Seed        uint64
	// Histograms keeps per-client HdrHistograms (acquire, release, cycle).
	Histograms bool
	// Conn tunes each client's connections to each node (its Hooks are
	// replaced by the client's fault gate).
	Conn cluster.ClientOptions
	// KeyPrefix puts every key the locks create at the server under it
	// (keyspace.Prefix.Key); history events keep the short names (k0, ...).
	KeyPrefix keyspace.Prefix
	// RunID, when set, names every client's connections
	// cluster.ConnName(RunID, id), for the command record.
	RunID string
	// ClientIDs, when set, are the clients this process drives (a worker's
	// share of Config.Clients: ids I, I+N, ...); the others run elsewhere.
	// An open loop's rate is shared out in proportion. Default: all.
	ClientIDs []int
	// ClockFiles, by client id, are the timestamp files of the clients
	// whose lock runs in a process of its own and whose clock a fault may
	// set: that process runs under libfaketime (lockimpl.Env.ClockFile).
	ClockFiles map[int]string
}

// Workload is the set of clients of one run.
type Workload struct {
	cfg       Config
	closed    bool                  // Close ran
	brokenErr atomic.Pointer[error] // the lock's own failure (Broken)
	cl        *cluster.Cluster      // for the links of locks in a process of their own
	clients   []*Client             // the clients this process drives, in id order
	byID      map[int]*Client       // the same, by id
	res       *Resource
	keyNames  []string // as history events name the keys: k0, k1, ...
	srvKeys   []string // as the locks (and the server) name them: <prefix>{k0}, ...
	prefix    keyspace.Prefix
	reentrant bool
	honour    bool
	lockInfo  lockimpl.Info
	config    map[string]any
	rec       *history.Recorder
	conns     []redis.UniversalClient
	holders   []holderCount // per key: clients that believe they hold it
	overlaps  atomic.Int64
	lockOpts  lockimpl.Options // with defaults
	// lockNotes counts Env.Note calls, renewNotes those reporting a
	// renewal; longestHold is the longest hold (acquire reply to the call
	// of its release, less the time the client was frozen in between, ns):
	// together they tell whether a lock's renewals match its declaration
	// (Notes).
	lockNotes   atomic.Int64
	renewNotes  atomic.Int64
	longestHold atomic.Int64
}

// holderCount is a key's count of clients that believe they hold it, on a
// cache line of its own (as the resource's cells): every cycle adds to it
// twice, and unpadded, 16 keys' counts shared a line that the clients of
// those keys passed between the cores.
type holderCount struct {
	n atomic.Int32
	_ [60]byte
}

// KeyName is the name of lock key index i in the history (the server's key
// is Options.KeyPrefix.Key of it).
func KeyName(i int) string { return "k" + strconv.Itoa(i) }

// New builds the clients, each with its own Locker and connections (with the
// client's fault hooks installed), without starting them.
func New(o Options) (*Workload, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	info, _, err := lockimpl.Lookup(o.Lock)
	if err != nil {
		return nil, err
	}
	w := &Workload{cl: o.Cluster, cfg: o.Config, res: NewResource(o.Config.Resource, o.Config.Keys, o.Config.Stock),
		reentrant: info.Reentrant, honour: *o.Config.HonourLost, lockInfo: info, rec: o.Rec, prefix: o.KeyPrefix,
		lockOpts: o.LockOptions.WithDefaults()}
	w.holders = make([]holderCount, o.Config.Keys)
	for i := 0; i < o.Config.Keys; i++ {
		w.keyNames = append(w.keyNames, KeyName(i))
		w.srvKeys = append(w.srvKeys, o.KeyPrefix.Key(KeyName(i)))
	}
	ids, err := clientIDs(o)
	if err != nil {
		return nil, err
	}
	if o.ClientIDs != nil && w.cfg.Mode == "open" {
		w.cfg.Rate *= float64(len(ids)) / float64(o.Config.Clients)
	}
	w.byID = map[int]*Client{}
	for _, id := range ids {
		if err := w.addClient(o, id); err != nil {
			w.Close()
			return nil, err
		}
	}
	if o.Config.KeyDist == "zipf" {
		for _, c := range w.clients {
			c.zipf = rand.NewZipf(c.rng, o.Config.Zipf, 1, uint64(o.Config.Keys-1))
		}
	}
	return w, nil
}

// clientIDs are the clients this process runs: o.ClientIDs (a worker's
// share, increasing ids in range) or all of them.
func clientIDs(o Options) ([]int, error) {
	if o.ClientIDs == nil {
		ids := make([]int, o.Config.Clients)
		for id := range ids {
			ids[id] = id
		}
		return ids, nil
	}
	for i, id := range o.ClientIDs {
		if id < 0 || id >= o.Config.Clients || (i > 0 && id <= o.ClientIDs[i-1]) {
			return nil, fmt.Errorf("client ids %v: not increasing ids in 0..%d", o.ClientIDs, o.Config.Clients-1)
		}
	}
	return o.ClientIDs, nil
}

// addClient builds client id: its connections (through its link proxies
// when the cluster has them, with its fault hooks) and its Locker.
func (w *Workload) addClient(o Options, id int) error {
	eps := o.Cluster.ClientEndpoints(id)
	c := &Client{ID: id, clock: lockimpl.NewSkewClock(), rec: o.Rec, w: w,
		rng: rand.New(rand.NewPCG(o.Seed, uint64(id)+1))}
	c.gate.c = c
	c.gate.dropWait = cmp.Or(o.Conn.Timeout, cluster.DefaultTimeout)
	c.key.Store(-1)
	if o.Histograms {
		c.hAcquire, c.hRelease, c.hCycle = newHist(), newHist(), newHist()
	}
	conns := make([]redis.UniversalClient, len(eps))
	for i, ep := range eps {
		co := o.Conn
		co.Hooks = []redis.Hook{c.gate.hook(i)}
		if o.RunID != "" {
			co.Name = cluster.ConnName(o.RunID, id)
		}
		conns[i] = o.Cluster.NewClient(ep, co)
	}
	w.conns = append(w.conns, conns...)
	c.gate.quorum = 1
	if w.lockInfo.MinNodes > 0 {
		c.gate.quorum = len(conns)/2 + 1
	}
	env := lockimpl.Env{ClientID: id, Conns: conns, Endpoints: LockEndpoints(eps), Clock: c.clock, Options: o.LockOptions, Note: c.note, Gate: &c.gate,
		KeyPrefix: string(o.KeyPrefix), ClockFile: o.ClockFiles[id]}
	if o.RunID != "" {
		env.ConnName = cluster.ConnName(o.RunID, id)
	}
	lk, err := lockimpl.New(o.Lock, env)
	if err != nil {
		return fmt.Errorf("lock %s for client %d: %w", o.Lock, id, err)
	}
	if len(w.clients) == 0 {
		if cf, ok := lk.(interface{ Config() map[string]any }); ok {
			w.config = cf.Config()
		}
	}
	c.lk = lk
	w.clients = append(w.clients, c)
	w.byID[id] = c
	return nil
}

// LockEndpoints are the cluster's endpoints as a Locker sees them
// (lockimpl.Env.Endpoints).
func LockEndpoints(eps []cluster.Endpoint) []lockimpl.Endpoint {
	leps := make([]lockimpl.Endpoint, len(eps))
	for i, ep := range eps {
		leps[i] = lockimpl.Endpoint{Addr: ep.Addr, ClusterAddrs: ep.ClusterAddrs, MasterName: ep.MasterName, SentinelAddrs: ep.SentinelAddrs, Password: ep.Password}
	}
	return leps
}

// sawHold records a hold of d ns.
func (w *Workload) sawHold(d int64) {
	for {
		old := w.longestHold.Load()
		if d <= old || w.longestHold.CompareAndSwap(old, d) {
			return
		}
	}
}

// Notes are the workload's findings about the lock itself, for the results.
//
// A lock that declares Info.Renews must report each renewal through
// Env.Note, or the checker cannot see its renewals (and judges its holds by
// the first deadline only). When a hold lasted longer than two renewal
// intervals plus a command timeout, a renewal attempt must have finished
// inside it; if the lock reported none during the whole run, it is flagged
// here rather than trusted. A hold ends when its release is called (a lock
// stops renewing when its release starts, and a release frozen or stalled
// for longer than the TTL is not holding time), and time the client spent
// frozen by a pause fault does not count (its renewals were frozen too).
//
// A lock that reports renewals but does not declare Renews is flagged too:
// it is judged as a plain lock and the renewal scenarios pass it by.
func (w *Workload) Notes() []string {
	o := &w.lockOpts
	if n := w.renewNotes.Load(); n > 0 && !w.lockInfo.Renews {
		return []string{fmt.Sprintf("lock %s %s (%d renewals): declare Renews in its lockimpl.Info, or it is judged as a lock that does not renew and the renewal scenarios skip it",
			w.lockInfo.Name, UndeclaredRenewals, n)}
	}
	if !w.lockInfo.Renews || w.lockNotes.Load() > 0 {
		return nil
	}
	longest := time.Duration(w.longestHold.Load())
	if longest <= 2*o.RenewInterval+o.CommandTimeout {
		return nil
	}
	return []string{fmt.Sprintf("lock %s %s, although a hold lasted %v (renew interval %v): its renewals are invisible to the checker",
		w.lockInfo.Name, SilentRenewals, longest.Round(time.Millisecond), o.RenewInterval)}
}

// SilentRenewals is in the note Notes gives a renewing lock that reported
// no renewal (locktest fails such a lock).
const SilentRenewals = "declares Renews but reported no renewal through Env.Note"

// UndeclaredRenewals is in the note Notes gives a lock that reported
// renewals through Env.Note without declaring Renews (locktest fails such a
// lock).
const UndeclaredRenewals = "reported renewals through Env.Note but does not declare Renews"

// broke records the first error by which the lock itself failed
// (lockimpl.ErrBroken): the clients stop and the run fails with it.
func (w *Workload) broke(err error) {
	w.brokenErr.CompareAndSwap(nil, &err)
}

// Broken is the error by which the lock itself failed, nil while it works.
func (w *Workload) Broken() error {
	if p := w.brokenErr.Load(); p != nil {
		return *p
	}
	return nil
}

// PipeCost is, for a lock behind a process of its own (a driver lock),
// what the lock-client protocol cost per request over every client: the
// round trip less the driver's own time, in ns. Nil for an in-process lock.
func (w *Workload) PipeCost() *hdrhistogram.Histogram {
	var all *hdrhistogram.Histogram
	for _, c := range w.clients {
		pc, ok := c.lk.(interface {
			PipeCost() *hdrhistogram.Histogram
		})
		if !ok {
			continue
		}
		if h := pc.PipeCost(); h != nil {
			if all == nil {
				all = h
			} else {
				all.Merge(h)
			}
		}
	}
	return all
}

// LockConfig is the lock's effective configuration, when it reports one.
func (w *Workload) LockConfig() map[string]any { return w.config }

// Resource is the protected resource.
func (w *Workload) Resource() *Resource { return w.res }

// Clients are the workload's clients.
func (w *Workload) Clients() []*Client { return w.clients }

func (w *Workload) pickKey(c *Client) int {
	n, r := w.cfg.Keys, c.rng
	if n == 1 {
		return 0
	}
	switch w.cfg.KeyDist {
	case "per-client":
		return c.ID % n
	case "zipf":
		return int(c.zipf.Uint64())
	case "hot":
		if r.Float64() < w.cfg.HotFraction || w.cfg.HotKeys == n {
			return r.IntN(w.cfg.HotKeys)
		}
		return w.cfg.HotKeys + r.IntN(n-w.cfg.HotKeys)
	}
	return r.IntN(n)
}

func (w *Workload) sample(r *rand.Rand, rg Range) time.Duration {
	if rg.Max <= rg.Min {
		return rg.Min
	}
	return rg.Min + time.Duration(r.Int64N(int64(rg.Max-rg.Min)+1))
}

// Run runs every client until stop is closed, then waits for the cycles in
// progress to finish; ctx cancels them outright (their outcome becomes
// unknown). Run returns when every client has ended.
func (w *Workload) Run(ctx context.Context, stop <-chan struct{}) {
	var tickets chan int64
	var wg sync.WaitGroup
	if w.cfg.Mode == "open" {
		tickets = make(chan int64, 1<<16)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.dispatch(stop, tickets)
		}()
	}
	for _, c := range w.clients {
		wg.Add(1)
		c.running.Store(true)
		go func() {
			defer wg.Done()
			defer c.running.Store(false)
			// A context per client: the per-command timeouts derived from it
			// register with it, not all with one shared parent (its lock).
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			c.run(cctx, stop, tickets)
		}()
	}
	wg.Wait()
}

// Running are the clients whose loop has not returned yet: after Run was
// cancelled, those stuck in a call their context does not reach.
func (w *Workload) Running() []int {
	var ids []int
	for _, c := range w.clients {
		if c.running.Load() {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// dispatch issues cycle start times at the configured rate (open loop): a
// slow lock makes cycles queue, and the queueing shows in their latency.
func (w *Workload) dispatch(stop <-chan struct{}, tickets chan<- int64) {
	interval := time.Duration(float64(time.Second) / w.cfg.Rate)
	next := w.rec.Now()
	for {
		next += int64(interval)
		if d := time.Duration(next - w.rec.Now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case tickets <- next:
		case <-stop:
			return
		default: // queue full: the lock is far behind; drop rather than block
		}
	}
}

// shortKey is the history's name of a key a lock reports (a lease's, a
// note's).
func (w *Workload) shortKey(key string) string {
	s, _ := w.prefix.Short(key)
	return s
}

// Close closes every client's Locker and connections. It may be called more
// than once.
func (w *Workload) Close() {
	if w.closed {
		return
	}
	w.closed = true
	// c.lk stays set: a client abandoned in a call (Running) still reads it.
	for _, c := range w.clients {
		if c.lk != nil {
			_ = c.lk.Close()
		}
	}
	for _, cn := range w.conns {
		_ = cn.Close()
	}
}

// Overlaps counts holds that began while another client believed it held
// the same key: a live estimate for progress displays (the checker decides).
func (w *Workload) Overlaps() int64 { return w.overlaps.Load() }

// Totals sums the clients' counters.
func (w *Workload) Totals() (cycles, failed, unknown int64) {
	for _, c := range w.clients {
		cycles += c.Cycles.Load()
		failed += c.Failed.Load()
		unknown += c.Unknowns.Load()
	}
	return
}

// Histograms merges the clients' histograms (µs); nil when not kept.
func (w *Workload) Histograms() map[string]*hdrhistogram.Histogram {
	if len(w.clients) == 0 || w.clients[0].hAcquire == nil {
		return nil
	}
	out := map[string]*hdrhistogram.Histogram{"acquire": newHist(), "release": newHist(), "cycle": newHist()}
	for _, c := range w.clients {
		out["acquire"].Merge(c.hAcquire)
		out["release"].Merge(c.hRelease)
		out["cycle"].Merge(c.hCycle)
	}
	return out
}

// --- faults.ClientControl ---

// IDs are the ids of the clients this process drives, in order.
func (w *Workload) IDs() []int {
	out := make([]int, len(w.clients))
	for i, c := range w.clients {
		out[i] = c.ID
	}
	return out
}

// Holders are the clients that believe they hold a lock now.
func (w *Workload) Holders() []int {
	var out []int
	for _, c := range w.clients {
		if c.holding.Load() && !c.gate.isDead() {
			out = append(out, c.ID)
		}
	}
	return out
}

// Pause freezes the first of clients cs to reach point for d (see
// faults.ClientControl).
func (w *Workload) Pause(ctx context.Context, cs []int, point string, d time.Duration) <-chan faults.Hit {
	return arm(ctx, w.gates(cs), point, armPause, d)
}

// Crash makes the first of clients cs to reach point die, without releasing.
func (w *Workload) Crash(ctx context.Context, cs []int, point string) <-chan faults.Hit {
	return arm(ctx, w.gates(cs), point, armCrash, 0)
}

// Watch reports when the first of clients cs reaches point; it does not stop
// the client.
func (w *Workload) Watch(ctx context.Context, cs []int, point string) <-chan faults.Hit {
	return arm(ctx, w.gates(cs), point, armWatch, 0)
}

func (w *Workload) gates(cs []int) []*gate {
	out := make([]*gate, len(cs))
	for i, c := range cs {
		out[i] = &w.byID[c].gate
	}
	return out
}

// SetClock skews client c's clock, and the clock of its lock's process
// when it runs in one (lockimpl.Process): through lockimpl.ProcessClock,
// whose measured effect it returns. A process whose clock cannot be set
// is an error: the fault did not reach it.
func (w *Workload) SetClock(c int, offset time.Duration, rate float64) (map[string]string, error) {
	cl := w.byID[c]
	cl.clock.Set(offset, rate)
	if pc, ok := cl.lk.(lockimpl.ProcessClock); ok {
		return pc.SetProcessClock(offset, rate)
	}
	if _, ok := cl.lk.(lockimpl.Process); ok {
		return nil, fmt.Errorf("client %d's lock runs in a process whose clock lockchaos cannot set", c)
	}
	return nil, nil
}

// BlockLoop pauses the first of clients cs to reach point for d as Pause
// does, but blocks its lock's event loop (lockimpl.LoopBlocker) instead
// of stopping its process.
func (w *Workload) BlockLoop(ctx context.Context, cs []int, point string, d time.Duration) <-chan faults.Hit {
	return arm(ctx, w.gates(cs), point, armBlockLoop, d)
}

// Cancel cancels the request of the first of clients cs to reach point
// in a cycle (see faults.ClientControl). On a lock in a driver process
// that cancels calls, in-acquire and in-release are the driver's call in
// flight, delay after its request (gate.Before).
func (w *Workload) Cancel(ctx context.Context, cs []int, point string, delay time.Duration) <-chan faults.Hit {
	gs := w.gates(cs)
	if len(gs) > 0 {
		if _, ok := gs[0].c.lk.(lockimpl.Process); ok && lockimpl.CancelsCalls(gs[0].c.lk) {
			point = callPoint(point)
		}
	}
	return arm(ctx, gs, point, armCancel, delay)
}

// Stall delays the listed commands of client c by d until undo, which
// returns the stall's measured effect: how many commands it delayed
// (history.EffectStalled), and how many of them in an acquire
// (history.EffectStalledInAcquire). Commands a lock's own process sends
// (a driver's) are met on the wire by a stall of every command, and not
// counted; a stall of some commands only does not reach them.
func (w *Workload) Stall(c int, commands []string, d time.Duration) func() map[string]string {
	g := &w.byID[c].gate
	g.mu.Lock()
	g.stalled.Store(0)
	g.stalledAcq.Store(0)
	g.stallD = d
	g.stallOn = nil
	if len(commands) > 0 {
		g.stallOn = map[string]bool{}
		for _, cmd := range commands {
			g.stallOn[cmd] = true
		}
	}
	g.unlock()
	undoLinks := func() {}
	if len(commands) == 0 { // a stall of some commands only cannot be told apart on the wire
		undoLinks = w.processLinks(c, nil, "delay", d)
	}
	return func() map[string]string {
		undoLinks()
		g.mu.Lock()
		g.stallD, g.stallOn = 0, nil
		g.unlock()
		eff := map[string]string{
			history.EffectStalled:          strconv.FormatInt(g.stalled.Load(), 10),
			history.EffectStalledInAcquire: strconv.FormatInt(g.stalledAcq.Load(), 10),
		}
		if _, ok := w.byID[c].lk.(lockimpl.Process); ok && len(commands) == 0 {
			eff[history.EffectStalledOnWire] = "true"
		}
		return eff
	}
}

// Cut makes client c's commands to the given nodes (0-based) fail at once
// (mode reset) or hang until their timeout (mode drop), until undo.
func (w *Workload) Cut(c int, nodes []int, mode string) (func(), error) {
	if mode != "reset" && mode != "drop" {
		return nil, fmt.Errorf("cut mode %q is not reset or drop", mode)
	}
	g := &w.byID[c].gate
	g.mu.Lock()
	if g.cuts == nil {
		g.cuts = map[int]string{}
	}
	for _, n := range nodes {
		g.cuts[n] = mode
	}
	g.unlock()
	undoLinks := w.processLinks(c, nodes, mode, 0)
	return func() {
		undoLinks()
		g.mu.Lock()
		for _, n := range nodes {
			delete(g.cuts, n)
		}
		g.unlock()
	}, nil
}

// processLinks faults the links of client c to nodes (indexes of its
// endpoints) when its lock runs in a process of its own (a driver,
// lockimpl.Process) and the cluster gave the client links (nodes nil:
// all of them): the commands
// that process's library sends on its own (renewals) do not pass the
// gate, so a cut (mode reset or drop) or a stall (mode delay, by d) must
// meet them on the wire, as it meets an in-process lock's at the gate.
func (w *Workload) processLinks(c int, nodes []int, mode string, d time.Duration) (undo func()) {
	cl := w.cl
	if _, ok := w.byID[c].lk.(lockimpl.Process); !ok || cl == nil || c >= cl.Spec.Links {
		return func() {}
	}
	if nodes == nil {
		for i := range cl.Endpoints() {
			nodes = append(nodes, i)
		}
	}
	dir := "both"
	if mode == "delay" {
		dir = "to-node"
	}
	var undos []func()
	seen := map[*cluster.Node]bool{}
	for _, i := range nodes {
		n := cl.Nodes[0] // a client's links: to the master, or one per independent master
		if cl.Spec.Topology == cluster.Independent && i >= 0 && i < len(cl.Nodes) {
			n = cl.Nodes[i]
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		if u, err := cl.LinkFault(c, n, mode, dir, d); err == nil {
			undos = append(undos, u)
		}
	}
	return func() {
		for _, u := range undos {
			u()
		}
	}
}
