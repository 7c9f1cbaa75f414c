package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/workloads"
)

// BenchOptions configure `lockchaos bench`: no faults, every lock on the same
// servers in the same run, so the numbers are comparable.
type BenchOptions struct {
	Locks    []string
	Clients  int
	Keys     int
	Duration time.Duration
	TTL      time.Duration
	Wait     string  // pubsub | poll ("" = lock default)
	Rate     float64 // > 0: open loop at this many cycle starts per second
	KeyDist  string  // uniform (default) | per-client | zipf | hot
	Hold     time.Duration
	// Nodes is the number of independent masters started (redlock-family
	// locks use all of them; the others use the first). Default 5.
	Nodes int
	Out   string
	Base  Options // cluster settings
	// NoHistory also runs each lock with recording off and reports the
	// overhead of recording.
	Overhead bool
	// Ceiling runs redis-benchmark for SET NX PX and the EVALSHA unlock.
	Ceiling bool
	// Repeat runs each lock this many times (with Overhead, alternating
	// recording on and off) and reports the run with the median throughput
	// and the spread. Default 1.
	Repeat int
}

// BenchLock is one lock's numbers.
type BenchLock struct {
	Lock       string                    `json:"lock"`
	Kind       string                    `json:"kind"`
	Nodes      int                       `json:"nodes"`
	Throughput float64                   `json:"throughput"`
	Cycles     int64                     `json:"cycles"`
	FailedAcq  int64                     `json:"failed_acquires"`
	Fairness   float64                   `json:"fairness"`
	LatencyUS  map[string]report.Latency `json:"latency_us"`
	Server     *report.ServerCost        `json:"server,omitempty"`
	// NoHistoryThroughput is the same run with recording off (the median
	// of Repeat runs).
	NoHistoryThroughput float64 `json:"no_history_throughput,omitempty"`
	// Runs and NoHistoryRuns are every run's throughput when Repeat > 1.
	Runs          []float64 `json:"runs,omitempty"`
	NoHistoryRuns []float64 `json:"no_history_runs,omitempty"`
	Verdict       string    `json:"verdict"`
	Dir           string    `json:"dir"`
	// RecordingCostPct is the throughput recording costs, in percent of the
	// recording-off throughput: the median over the on/off pairs (--overhead).
	RecordingCostPct float64 `json:"recording_cost_pct,omitempty"`
	// Interrupted: an interrupt cut this lock's (median) run short.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Bench is the whole comparison.
type Bench struct {
	Clients  int         `json:"clients"`
	Keys     int         `json:"keys"`
	Nodes    int         `json:"nodes"`
	KeyDist  string      `json:"key_dist"`
	Repeat   int         `json:"repeat,omitempty"`
	Duration string      `json:"duration"`
	Mode     string      `json:"mode"`
	Backend  string      `json:"backend"`
	Machine  string      `json:"machine"`
	Locks    []BenchLock `json:"locks"`
	// Ceiling from redis-benchmark against node 1 (requests/s).
	SetNXPX   float64 `json:"redis_benchmark_set_nx_px,omitempty"`
	EvalSHA   float64 `json:"redis_benchmark_evalsha,omitempty"`
	CeilingCS float64 `json:"ceiling_cycles_per_sec,omitempty"`
	// GoRedisCS is the same cycle (SET NX PX, then the unlock script) from
	// as many bare go-redis clients, connected as the bench's are, with no
	// lock code, no harness and no recording: what the client library alone
	// reaches, to tell its cost from the harness's.
	GoRedisCS float64 `json:"go_redis_cycles_per_sec,omitempty"`
	// CeilingRuns and GoRedisRuns are every measurement with Repeat > 1
	// (the fields above are their medians).
	CeilingRuns []float64 `json:"ceiling_runs,omitempty"`
	GoRedisRuns []float64 `json:"go_redis_runs,omitempty"`
	// SetRTTP50US is the p50 of a single SET round trip (one go-redis
	// client, same node), the yardstick for hand-off latency.
	SetRTTP50US float64 `json:"set_rtt_p50_us"`
	// FanOutRTTP50US is the p50 of one SET to every node at once (bare
	// go-redis, a goroutine per node): the yardstick for Redlock's acquire.
	FanOutRTTP50US float64 `json:"fan_out_rtt_p50_us,omitempty"`
	// NotRun are the locks asked for that an interrupt left unbenched.
	NotRun []string `json:"not_run,omitempty"`
}

// RunBench runs the locks one after another on one set of servers.
func RunBench(ctx context.Context, o BenchOptions) (*Bench, error) {
	if o.Nodes == 0 {
		o.Nodes = 5
	}
	if o.Clients < 1 || o.Keys < 1 || o.Duration <= 0 {
		return nil, fail(ExitBadInput, "bench: --clients, --keys and --duration must be positive")
	}
	for _, l := range o.Locks {
		if _, _, err := lockimpl.Lookup(l); err != nil {
			return nil, badField("lock", "%w", err)
		}
	}
	topo := cluster.Independent
	if o.Base.Backend == cluster.External && len(o.Base.Addrs) == 1 {
		topo = cluster.Single
	}
	// Bad flags are found before any server starts or directory is made.
	vo := o
	if o.Base.Backend == cluster.External {
		vo.Nodes = max(len(o.Base.Addrs), 1)
	}
	if err := benchScenario(vo, "bench", benchTopology(vo.Nodes)).Validate(); err != nil {
		return nil, fail(ExitBadInput, "bench: the flags make an invalid workload: %w", err)
	}
	spec := cluster.Spec{Topology: topo, Backend: o.Base.Backend, Nodes: o.Nodes, RedisServer: o.Base.RedisServer,
		Image: o.Base.Image, Addrs: o.Base.Addrs, AllowRemote: o.Base.AllowRemote, Dir: o.Out}
	if err := prepareDir(o.Out); err != nil {
		return nil, badField("out", "%s: %w", o.Out, err)
	}
	prefix := keyspace.Default(keyspace.NewRunID())
	if o.Base.KeyPrefix != "" {
		if err := keyspace.Check(o.Base.KeyPrefix); err != nil {
			return nil, badField("key-prefix", "%w", err)
		}
		prefix = keyspace.Prefix(o.Base.KeyPrefix)
	}
	// Every lock's run uses the bench's prefix: each one removes its keys
	// when it ends, so the next one's preflight finds none.
	o.Base.KeyPrefix = string(prefix)
	cl, err := cluster.Start(ctx, spec)
	if err != nil {
		return nil, &Error{Code: ExitCodeOf(err), Err: fmt.Errorf("bench: start servers: %w", err)}
	}
	defer cl.Stop()
	if err := preflight(ctx, cl, prefix); err != nil {
		return nil, err
	}
	// The yardsticks' keys too, also when the bench is interrupted.
	defer cleanUp(ctx, cl, prefix, true)
	if o.KeyDist == "" {
		o.KeyDist = "uniform"
	}
	o.Repeat = max(o.Repeat, 1)
	b := &Bench{Clients: o.Clients, Keys: o.Keys, Nodes: len(cl.Nodes), KeyDist: o.KeyDist, Repeat: o.Repeat, Duration: o.Duration.String(), Mode: "closed", Backend: cl.Backend, Machine: machine()}
	if o.Rate > 0 {
		b.Mode = fmt.Sprintf("open %.0f/s", o.Rate)
	}
	admin := make([]*redis.Client, len(cl.Nodes))
	for i, n := range cl.Nodes {
		admin[i] = cl.AdminClient(n)
	}
	// Yardsticks from clients connected as the bench's are.
	var bare []redis.UniversalClient
	for _, ep := range cl.Endpoints() {
		bare = append(bare, cl.NewClient(ep, benchConn))
	}
	b.SetRTTP50US = setRTT(ctx, bare[:1], prefix)
	if len(bare) > 1 {
		b.FanOutRTTP50US = setRTT(ctx, bare, prefix)
	}
	if o.Ceiling {
		// With --repeat the yardsticks are measured as often as the locks
		// and their medians used: the machine drifts by several percent.
		type ceil struct{ setnx, evalsha, cycles float64 }
		var cs []ceil
		for r := 0; r < o.Repeat && ctx.Err() == nil; r++ {
			var c ceil
			c.setnx, c.evalsha = redisBenchmark(ctx, cl.Nodes[0].ServerAddr, o.Clients, prefix)
			if c.setnx > 0 && c.evalsha > 0 {
				c.cycles = 1 / (1/c.setnx + 1/c.evalsha)
			}
			cs = append(cs, c)
			b.CeilingRuns = append(b.CeilingRuns, c.cycles)
			b.GoRedisRuns = append(b.GoRedisRuns, goRedisCycles(ctx, cl, admin[0], o.Clients, min(o.Duration, 5*time.Second), prefix))
		}
		if len(cs) > 0 {
			sort.Slice(cs, func(i, j int) bool { return cs[i].cycles < cs[j].cycles })
			m := cs[(len(cs)-1)/2]
			b.SetNXPX, b.EvalSHA, b.CeilingCS = m.setnx, m.evalsha, m.cycles
			b.GoRedisCS = median(b.GoRedisRuns)
		}
		if len(cs) < 2 {
			b.CeilingRuns, b.GoRedisRuns = nil, nil
		}
	}
	for _, lock := range o.Locks {
		if ctx.Err() != nil {
			break
		}
		info, _, _ := lockimpl.Lookup(lock)
		var runs []*BenchLock
		var nh []float64
		for r := 0; r < o.Repeat && ctx.Err() == nil; r++ {
			bl, err := benchLock(ctx, o, cl, admin, info, false, r)
			if err != nil {
				return b, err
			}
			runs = append(runs, bl)
			if o.Overhead {
				if n, err := benchLock(ctx, o, cl, admin, info, true, r); err == nil {
					nh = append(nh, n.Throughput)
				}
			}
		}
		if len(runs) == 0 {
			break
		}
		b.Locks = append(b.Locks, medianRun(runs, nh))
	}
	for _, lock := range o.Locks[len(b.Locks):] {
		b.NotRun = append(b.NotRun, lock)
	}
	return b, nil
}

func benchScenario(o BenchOptions, name, topo string) *scenarios.Scenario {
	s := &scenarios.Scenario{Name: name, Topology: topo, Nodes: o.Nodes, Duration: o.Duration, Seed: 1,
		Lock:     lockimpl.Options{TTL: o.TTL, Wait: o.Wait},
		Workload: workloads.Config{Clients: o.Clients, Keys: o.Keys, KeyDist: o.KeyDist, Hold: workloads.Range{Min: o.Hold, Max: o.Hold}, Resource: "counter"}}
	if o.Rate > 0 {
		s.Workload.Mode, s.Workload.Rate = "open", o.Rate
	}
	return s
}

// medianRun is the run with the median throughput (the lower middle one of
// an even count), with every run's throughput and the recording-off median.
// noHistory[i], when given, ran right after runs[i]: the cost of recording
// is the median of those pairs' costs, which cancels the machine's drift
// between pairs (the difference of two medians does not).
func medianRun(runs []*BenchLock, noHistory []float64) BenchLock {
	sorted := append([]*BenchLock{}, runs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Throughput < sorted[j].Throughput })
	bl := *sorted[(len(sorted)-1)/2]
	if len(runs) > 1 {
		for _, r := range runs {
			bl.Runs = append(bl.Runs, r.Throughput)
		}
		bl.NoHistoryRuns = noHistory
	}
	bl.NoHistoryThroughput = median(noHistory)
	if len(noHistory) == len(runs) {
		var costs []float64
		for i, r := range runs {
			if noHistory[i] > 0 {
				costs = append(costs, 100*(noHistory[i]-r.Throughput)/noHistory[i])
			}
		}
		if len(costs) > 0 {
			bl.RecordingCostPct = round2(median(costs))
		}
	}
	return bl
}

// median of vs (the lower middle one of an even count); 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64{}, vs...)
	sort.Float64s(s)
	return s[(len(s)-1)/2]
}

// spread is "min–max" of vs.
func spread(vs []float64) string {
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

// benchTopology is the scenario topology of a bench on n masters.
func benchTopology(n int) string {
	if n == 1 {
		return cluster.Single
	}
	return cluster.Independent
}

// benchConn is how every bench client connects, the yardsticks' too. No fault
// closes a bench client's connection, so go-redis's liveness probe on every
// pool checkout (a recv syscall per command) is skipped.
var benchConn = cluster.ClientOptions{PoolSize: 2, NoConnCheck: true}

func benchLock(ctx context.Context, o BenchOptions, cl *cluster.Cluster, admin []*redis.Client, info lockimpl.Info, noHistory bool, rep int) (*BenchLock, error) {
	s := benchScenario(o, "bench", benchTopology(len(cl.Nodes)))
	if err := s.Validate(); err != nil {
		return nil, fail(ExitBadInput, "bench: %w", err)
	}
	// Only the bench's own keys are removed (never FLUSHALL: the servers
	// may be the user's), and the server's command counters are read before
	// and after rather than reset.
	if _, err := cl.DeleteKeys(ctx, keyspace.Prefix(o.Base.KeyPrefix).Pattern()); err != nil && ctx.Err() == nil {
		return nil, fail(ExitInfra, "bench: remove the previous run's keys: %w", err)
	}
	before := serverCost(ctx, admin)
	dir := filepath.Join(o.Out, info.Name)
	if noHistory {
		dir += "-nohistory"
	}
	if rep > 0 {
		dir += fmt.Sprintf("-run%d", rep+1)
	}
	ro := o.Base
	ro.Scenario, ro.Lock, ro.Out, ro.Cluster, ro.NoHistory, ro.Progress = s, info.Name, dir, cl, noHistory, nil
	ro.Conn, ro.NoObserver = benchConn, true
	out, err := Run(ctx, ro)
	if out == nil {
		return nil, err
	}
	bl := &BenchLock{Lock: info.Name, Kind: string(info.Kind), Nodes: len(cl.Nodes), Dir: dir, Interrupted: out.Interrupted}
	// The run happened: read its cost even when an interrupt ended it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	cost := costSince(before, serverCost(cctx, admin))
	cancel()
	if out.Results != nil {
		r := out.Results
		bl.Throughput, bl.Cycles, bl.FailedAcq = r.Stats.Throughput, r.Stats.Cycles, r.Stats.Acquires.Fail
		bl.Fairness, bl.LatencyUS, bl.Verdict = r.Stats.Fairness, r.Stats.LatencyUS, r.Verdict
		if cost != nil && r.Stats.Cycles > 0 {
			bl.Server = perCycle(cost, r.Stats.Cycles)
			r.Stats.Server = bl.Server
			_ = report.WriteJSON(filepath.Join(dir, "results.json"), r)
		}
	} else if out.Workload != nil {
		cycles, failed, _ := out.Workload.Totals()
		bl.Cycles, bl.FailedAcq = cycles, failed
		bl.Throughput = float64(cycles) / o.Duration.Seconds()
	}
	return bl, nil
}

type cmdStat struct{ calls, usec float64 }

// serverCost sums INFO commandstats over the nodes (costSince subtracts the
// counts before the run: the counters are never reset, the servers may be
// the user's).
func serverCost(ctx context.Context, admin []*redis.Client) map[string]cmdStat {
	out := map[string]cmdStat{}
	re := regexp.MustCompile(`^cmdstat_([^:]+):calls=(\d+),usec=(\d+)`)
	for _, a := range admin {
		txt, err := a.Info(ctx, "commandstats").Result()
		if err != nil {
			return nil
		}
		sc := bufio.NewScanner(strings.NewReader(txt))
		for sc.Scan() {
			m := re.FindStringSubmatch(sc.Text())
			// INFO is this function's; SCAN and UNLINK are the harness's
			// preflight and clean-up of its prefix (no lock sends them).
			if m == nil || m[1] == "info" || m[1] == "scan" || m[1] == "unlink" {
				continue
			}
			c, _ := strconv.ParseFloat(m[2], 64)
			u, _ := strconv.ParseFloat(m[3], 64)
			s := out[m[1]]
			s.calls += c
			s.usec += u
			out[m[1]] = s
		}
	}
	return out
}

// costSince is after − before per command; nil when either is missing.
func costSince(before, after map[string]cmdStat) map[string]cmdStat {
	if before == nil || after == nil {
		return nil
	}
	out := map[string]cmdStat{}
	for name, a := range after {
		b := before[name]
		if d := (cmdStat{a.calls - b.calls, a.usec - b.usec}); d.calls > 0 {
			out[name] = d
		}
	}
	return out
}

func perCycle(cost map[string]cmdStat, cycles int64) *report.ServerCost {
	sc := &report.ServerCost{ByCommand: map[string]float64{}}
	n := float64(cycles)
	for name, s := range cost {
		sc.CommandsPerCycle += s.calls / n
		sc.UsecPerCycle += s.usec / n
		sc.ByCommand[name] = round2(s.calls / n)
	}
	sc.CommandsPerCycle, sc.UsecPerCycle = round2(sc.CommandsPerCycle), round2(sc.UsecPerCycle)
	return sc
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// setRTT measures, for a second, a SET sent to every client in cs at once
// (one goroutine each) and returns the p50 µs of the last reply.
func setRTT(ctx context.Context, cs []redis.UniversalClient, p keyspace.Prefix) float64 {
	key := p.Aux("rtt")
	h := hdrhistogram.New(1, 10_000_000, 3)
	end := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(end) && i < 200_000; i++ {
		t := time.Now()
		var failed atomic.Bool
		set := func(c redis.UniversalClient) {
			if c.Set(ctx, key, i, 0).Err() != nil {
				failed.Store(true)
			}
		}
		var wg sync.WaitGroup
		for _, c := range cs[1:] {
			wg.Go(func() { set(c) })
		}
		set(cs[0])
		wg.Wait()
		if failed.Load() {
			break
		}
		_ = h.RecordValue(max(time.Since(t).Microseconds(), 1))
	}
	for _, c := range cs {
		_ = c.Del(ctx, key).Err()
	}
	return float64(h.ValueAtQuantile(50))
}

// unlockSrc is the simple lock's unlock script: compare-and-delete + publish.
const unlockSrc = `if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("DEL", KEYS[1]) redis.call("PUBLISH", KEYS[2], "1") return 1 end return 0`

// goRedisCycles runs clients bare go-redis clients, each on its own key, for
// d: SET NX PX then the unlock script, nothing else. It returns cycles/s (0
// if a command failed).
func goRedisCycles(ctx context.Context, cl *cluster.Cluster, admin *redis.Client, clients int, d time.Duration, p keyspace.Prefix) float64 {
	sc := redis.NewScript(unlockSrc)
	if err := sc.Load(ctx, admin).Err(); err != nil {
		return 0
	}
	ep := cl.Endpoints()[0]
	var cycles atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i := 0; i < clients; i++ {
		c := cl.NewClient(ep, benchConn)
		key := p.Aux(fmt.Sprintf("bare:%d", i))
		keys := []string{key, key + ":released"}
		wg.Go(func() {
			defer c.Close()
			for time.Now().Before(end) && ctx.Err() == nil && !failed.Load() {
				if ok, err := c.SetNX(ctx, key, "t", 10*time.Second).Result(); err != nil || !ok {
					failed.Store(true)
				} else if n, err := sc.EvalSha(ctx, c, keys, "t").Int(); err != nil || n != 1 {
					failed.Store(true)
				} else {
					cycles.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return 0
	}
	return float64(cycles.Load()) / d.Seconds()
}

var rpsRE = regexp.MustCompile(`([0-9.]+) requests per second`)

// redisBenchmark runs redis-benchmark (if installed) for the two commands of
// the simple lock's cycle with the same number of connections; 0 when it is
// not available.
func redisBenchmark(ctx context.Context, addr string, clients int, p keyspace.Prefix) (setnx, evalsha float64) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return 0, 0
	}
	host, port, _ := strings.Cut(addr, ":")
	run := func(args ...string) float64 {
		base := []string{"-h", host, "-p", port, "-c", strconv.Itoa(clients), "-n", "200000", "-r", "100000", "-q"}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		outb, err := exec.CommandContext(cctx, bin, append(base, args...)...).CombinedOutput()
		if err != nil {
			return 0
		}
		lines := bytes.Split(bytes.TrimSpace(outb), []byte("\r"))
		m := rpsRE.FindSubmatch(lines[len(lines)-1])
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	key := p.Aux("lock:__rand_int__")
	setnx = run("SET", key, "tok", "NX", "PX", "10000")
	c := redis.NewClient(&redis.Options{Addr: addr})
	sha, err := c.ScriptLoad(ctx, unlockSrc).Result()
	c.Close()
	if err != nil {
		return setnx, 0
	}
	evalsha = run("EVALSHA", sha, "2", key, p.Aux("chan:__rand_int__"), "tok")
	return setnx, evalsha
}

// BenchMarkdown is the comparison table.
func BenchMarkdown(b *Bench) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# lockchaos bench\n\n%d clients, %d keys (%s), %s, %s loop, backend %s. Machine: %s.\n\n", b.Clients, b.Keys, b.KeyDist, b.Duration, b.Mode, b.Backend, b.Machine)
	if b.CeilingCS > 0 {
		fmt.Fprintf(&sb, "redis-benchmark -c %d against node 1: SET NX PX %.0f/s, EVALSHA unlock %.0f/s → ceiling %.0f cycles/s", b.Clients, b.SetNXPX, b.EvalSHA, b.CeilingCS)
		if len(b.CeilingRuns) > 1 {
			fmt.Fprintf(&sb, " (median of %d, spread %s)", len(b.CeilingRuns), spread(b.CeilingRuns))
		}
		sb.WriteString(".\n\n")
	}
	if b.GoRedisCS > 0 && b.CeilingCS > 0 {
		fmt.Fprintf(&sb, "Bare go-redis, %d clients each on its own key, the same two commands with no lock code, harness or recording: %.0f cycles/s", b.Clients, b.GoRedisCS)
		if len(b.GoRedisRuns) > 1 {
			fmt.Fprintf(&sb, " (median of %d, spread %s)", len(b.GoRedisRuns), spread(b.GoRedisRuns))
		}
		fmt.Fprintf(&sb, " = %.2f of the ceiling (the client library's own share of any gap).\n\n", b.GoRedisCS/b.CeilingCS)
	}
	fmt.Fprintf(&sb, "Single SET round trip p50: %.0f µs.", b.SetRTTP50US)
	if b.FanOutRTTP50US > 0 && b.SetRTTP50US > 0 {
		fmt.Fprintf(&sb, " One SET to all %d nodes at once (bare go-redis): %.0f µs p50 = %.1f× (the floor for a Redlock acquire).", b.Nodes, b.FanOutRTTP50US, b.FanOutRTTP50US/b.SetRTTP50US)
	}
	sb.WriteString("\n\n")
	if len(b.NotRun) > 0 {
		fmt.Fprintf(&sb, "**Interrupted**: not run: %s.\n\n", strings.Join(b.NotRun, ", "))
	}
	if b.Repeat > 1 {
		fmt.Fprintf(&sb, "Each lock ran %d times; its row is the median run, cycles/s with the spread of all runs.\n\n", b.Repeat)
	}
	sb.WriteString("| lock | kind | cycles/s | of ceiling | acquire p50 | acquire p99 | hand-off p50 | hand-off/RTT | cycle p99 | failed acq | fairness | Redis cmds/cycle | Redis µs/cycle | recording overhead |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	locks := append([]BenchLock{}, b.Locks...)
	sort.SliceStable(locks, func(i, j int) bool { return locks[i].Throughput > locks[j].Throughput })
	for _, l := range locks {
		ceil, ovh, cmds, usec, ratio := "–", "–", "–", "–", "–"
		if b.CeilingCS > 0 {
			ceil = fmt.Sprintf("%.2f", l.Throughput/b.CeilingCS)
		}
		if l.NoHistoryThroughput > 0 {
			ovh = fmt.Sprintf("%+.1f%%", l.RecordingCostPct)
		}
		if l.Server != nil {
			cmds, usec = fmt.Sprintf("%.2f", l.Server.CommandsPerCycle), fmt.Sprintf("%.1f", l.Server.UsecPerCycle)
		}
		ho := l.LatencyUS["handoff"]
		if ho.Count > 0 && b.SetRTTP50US > 0 {
			ratio = fmt.Sprintf("%.1f×", ho.P50/b.SetRTTP50US)
		}
		tp := fmt.Sprintf("%.0f", l.Throughput)
		if len(l.Runs) > 1 {
			tp += " (" + spread(l.Runs) + ")"
		}
		if len(l.NoHistoryRuns) > 1 {
			ovh += " (off: " + spread(l.NoHistoryRuns) + ")"
		}
		name := l.Lock
		if l.Interrupted {
			name += " (interrupted)"
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %.3f | %s | %s | %s |\n", name, l.Kind, tp, ceil,
			report.FormatUS(l.LatencyUS["acquire"].P50), report.FormatUS(l.LatencyUS["acquire"].P99), fmtOpt(ho), ratio,
			report.FormatUS(l.LatencyUS["cycle"].P99), l.FailedAcq, l.Fairness, cmds, usec, ovh)
	}
	return sb.String()
}

func fmtOpt(l report.Latency) string {
	if l.Count == 0 {
		return "–"
	}
	return report.FormatUS(l.P50)
}

func machine() string {
	out, err := exec.Command("sh", "-c", "nproc; grep -m1 'model name' /proc/cpuinfo | cut -d: -f2; redis-server --version 2>/dev/null | cut -d' ' -f3").Output()
	if err != nil {
		return "unknown"
	}
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	if len(f) >= 3 {
		return fmt.Sprintf("%s cores, %s, Redis %s", f[0], f[1], strings.TrimPrefix(f[2], "v="))
	}
	return strings.Join(f, ", ")
}
