package campaign

import (
	"context"
	"path/filepath"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/internal/cputime"
	"github.com/lockchaos/lockchaos/keyspace"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/yardstick"
)

// cycleCost is what one side of the bench's ratio cost this process over a
// window: CPU time (every thread: the clients, go-redis, the history's
// drain, the GC), heap allocations and cycles.
type cycleCost struct {
	cpu    time.Duration
	allocs uint64
	cycles float64
	wall   time.Duration
}

func (c *cycleCost) add(o cycleCost) {
	c.cpu, c.allocs, c.cycles, c.wall = c.cpu+o.cpu, c.allocs+o.allocs, c.cycles+o.cycles, c.wall+o.wall
}

func (c cycleCost) cpuPerCycle() float64    { return float64(c.cpu.Nanoseconds()) / c.cycles }
func (c cycleCost) allocsPerCycle() float64 { return float64(c.allocs) / c.cycles }
func (c cycleCost) perSecond() float64      { return c.cycles / c.wall.Seconds() }

// sample is a reading of the process's counters.
type sample struct {
	cpu    time.Duration
	allocs uint64
	at     time.Time
}

var allocsMetric = []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}

func readSample() sample {
	s := make([]metrics.Sample, 1)
	copy(s, allocsMetric)
	metrics.Read(s)
	return sample{cpu: cputime.Process(), allocs: s[0].Value.Uint64(), at: time.Now()}
}

func (b sample) to(a sample, cycles float64) cycleCost {
	return cycleCost{cpu: a.cpu - b.cpu, allocs: a.allocs - b.allocs, cycles: cycles, wall: a.at.Sub(b.at)}
}

// measureBare is yardstick.GoRedisCycles over d, as the bench runs it:
// bare go-redis's cost per cycle (its clients' start included, a few ms).
func measureBare(ctx context.Context, tb testing.TB, cl *cluster.Cluster, admin *redis.Client, clients int, d time.Duration, p keyspace.Prefix) cycleCost {
	before := readSample()
	cps := yardstick.GoRedisCycles(ctx, cl, admin, benchConn, clients, d, p)
	after := readSample()
	if cps <= 0 {
		tb.Fatal("bare go-redis: a command failed")
	}
	return before.to(after, cps*d.Seconds())
}

// measureLock runs lock through runner.Run as `lockchaos bench` does
// (benchRunOptions: recording on, histograms, the fault gate) and measures
// the workload phase only, between its first and last progress report (so
// neither the start nor the check after the run is counted).
func measureLock(ctx context.Context, tb testing.TB, cl *cluster.Cluster, admin *redis.Client, o BenchOptions, lock, dir string, noHistory bool) cycleCost {
	info, _, err := lockimpl.Lookup(lock)
	if err != nil {
		tb.Fatal(err)
	}
	if err := admin.FlushAll(ctx).Err(); err != nil {
		tb.Fatal(err)
	}
	s := benchScenario(o, "bench", cluster.Single)
	ro := benchRunOptions(o, s, info, dir, cl, noHistory)
	var first, last sample
	var c0, c1 int64
	n := 0
	ro.Progress = func(p runner.Progress) {
		if p.Phase != "workload" {
			return
		}
		if n == 0 {
			first, c0 = readSample(), p.Cycles
		} else {
			last, c1 = readSample(), p.Cycles
		}
		n++
	}
	out, err := runner.Run(ctx, ro)
	if err != nil {
		tb.Fatalf("run %s: %v", lock, err)
	}
	if !noHistory && (out.Results == nil || out.Results.Verdict != "valid") {
		tb.Fatalf("run %s: no valid result (%+v)", lock, out.Results)
	}
	if n < 2 || c1 <= c0 {
		tb.Fatalf("run %s: %d progress reports in the workload phase, cycles %d → %d: no window to measure", lock, n, c0, c1)
	}
	return first.to(last, float64(c1-c0))
}

// cycleCPUSetup starts one redis-server and returns what both sides use.
func cycleCPUSetup(tb testing.TB, clients int, d time.Duration) (*clustertest.Cluster, *redis.Client, BenchOptions) {
	c := clustertest.Start(tb, cluster.Spec{Topology: cluster.Single})
	admin := c.AdminClient(c.Nodes[0])
	o := BenchOptions{Clients: clients, Keys: clients, KeyDist: "per-client", Duration: d, Nodes: 1}
	o.Setup.KeyPrefix = string(keyspace.Default(keyspace.NewRunID()))
	return c, admin, o
}

// BenchmarkCycleCPU is the bench's ratio (issue 27) as CPU time rather than
// throughput: the client process's CPU per cycle, and its heap allocations,
// of bare go-redis (the bench's yardstick) and of the simple lock through
// the whole harness, 50 clients each on its own key against one
// redis-server. On a machine where redis-server takes one core and the
// client the other, throughput follows the client's CPU per cycle, and
// CPU per cycle hardly depends on the machine's load as throughput does.
//
//	go test -run '^$' -bench CycleCPU -benchtime 1x -count 5 ./campaign
func BenchmarkCycleCPU(b *testing.B) {
	const clients = 50
	c, admin, o := cycleCPUSetup(b, clients, 4*time.Second)
	ctx := context.Background()
	var bare, lock, norec cycleCost
	for i := 0; i < b.N; i++ {
		bb := measureBare(ctx, b, c.Cluster, admin, clients, 3*time.Second, keyspace.Prefix(o.Setup.KeyPrefix))
		lb := measureLock(ctx, b, c.Cluster, admin, o, "simple", filepath.Join(b.TempDir(), "simple"), false)
		nb := measureLock(ctx, b, c.Cluster, admin, o, "simple", filepath.Join(b.TempDir(), "simple-norec"), true)
		bare.add(bb)
		lock.add(lb)
		norec.add(nb)
	}
	b.ReportMetric(bare.cpuPerCycle(), "bare-cpu-ns/cycle")
	b.ReportMetric(lock.cpuPerCycle(), "simple-cpu-ns/cycle")
	b.ReportMetric(norec.cpuPerCycle(), "norec-cpu-ns/cycle")
	b.ReportMetric(bare.allocsPerCycle(), "bare-allocs/cycle")
	b.ReportMetric(lock.allocsPerCycle(), "simple-allocs/cycle")
	b.ReportMetric(bare.perSecond(), "bare-cycles/s")
	b.ReportMetric(lock.perSecond(), "simple-cycles/s")
	b.ReportMetric(norec.perSecond(), "norec-cycles/s")
	// bare's CPU per cycle over the lock's: the ratio the bench's
	// throughput ratio tends to when the client's core is the bottleneck.
	b.ReportMetric(bare.cpuPerCycle()/lock.cpuPerCycle(), "cpu-ratio")
}

// The measurement BenchmarkCycleCPU makes works: both sides run cycles,
// cost CPU and allocate, and the lock's window lies inside its workload.
func TestBenchCycleCPUMeasures(t *testing.T) {
	if cputime.Process() == 0 {
		t.Skip("no process CPU time on this platform")
	}
	c, admin, o := cycleCPUSetup(t, 4, 3*time.Second)
	ctx := context.Background()
	bare := measureBare(ctx, t, c.Cluster, admin, 4, time.Second, keyspace.Prefix(o.Setup.KeyPrefix))
	lock := measureLock(ctx, t, c.Cluster, admin, o, "simple", filepath.Join(t.TempDir(), "simple"), false)
	for name, m := range map[string]cycleCost{"bare": bare, "simple": lock} {
		if m.cycles < 100 || m.cpu <= 0 || m.allocs == 0 {
			t.Errorf("%s: %.0f cycles, %v CPU, %d allocations: want each positive (cycles ≥ 100)", name, m.cycles, m.cpu, m.allocs)
		}
		if name == "simple" && (m.wall < 900*time.Millisecond || m.wall > 3*time.Second) {
			t.Errorf("simple's window %v: want the workload's progress reports, ≥ 1 s apart, within its 3 s", m.wall)
		}
		t.Logf("%s: %.0f cycles, %.0f CPU-ns/cycle, %.1f allocs/cycle", name, m.cycles, m.cpuPerCycle(), m.allocsPerCycle())
	}
}
