// Package yardstick measures what a lock's numbers are compared with: the
// round trip of one SET (and of one SET to every node at once), the lock
// cycle from bare go-redis with no lock code or harness, redis-benchmark's
// ceiling for the same two commands, and the servers' own cost per command
// (INFO commandstats). lockchaos bench reports each beside the locks.
package yardstick

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
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
	"github.com/lockchaos/lockchaos/report/metrics"
)

// CmdStat is one command's INFO commandstats counters.
type CmdStat struct{ Calls, Usec float64 }

// Cost is the servers' counters per command.
type Cost map[string]CmdStat

// ServerCost sums INFO commandstats over the nodes (costSince subtracts the
// counts before the run: the counters are never reset, the servers may be
// the user's).
func ServerCost(ctx context.Context, admin []*redis.Client) Cost {
	out := Cost{}
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
			s.Calls += c
			s.Usec += u
			out[m[1]] = s
		}
	}
	return out
}

// Since is after − before per command; nil when either is missing.
func (after Cost) Since(before Cost) Cost {
	if before == nil || after == nil {
		return nil
	}
	out := Cost{}
	for name, a := range after {
		b := before[name]
		if d := (CmdStat{a.Calls - b.Calls, a.Usec - b.Usec}); d.Calls > 0 {
			out[name] = d
		}
	}
	return out
}

// PerCycle is the cost divided over cycles lock cycles.
func (cost Cost) PerCycle(cycles int64) *metrics.ServerCost {
	sc := &metrics.ServerCost{ByCommand: map[string]float64{}}
	n := float64(cycles)
	for name, s := range cost {
		sc.CommandsPerCycle += s.Calls / n
		sc.UsecPerCycle += s.Usec / n
		sc.ByCommand[name] = round2(s.Calls / n)
	}
	sc.CommandsPerCycle, sc.UsecPerCycle = round2(sc.CommandsPerCycle), round2(sc.UsecPerCycle)
	return sc
}

// SetRTT measures, for a second, a SET sent to every client in cs at once
// (one goroutine each) and returns the p50 µs of the last reply.
func SetRTT(ctx context.Context, cs []redis.UniversalClient, p keyspace.Prefix) float64 {
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

// GoRedisCycles runs clients bare go-redis clients, each on its own key, for
// d: SET NX PX then the unlock script, nothing else. The value is a lock
// token of the locks' length (lockimpl.NewToken), made once per client:
// the same bytes on the wire as a lock's cycle, without the lock's work of
// making a new one each cycle. It returns cycles/s (0 if a command failed).
func GoRedisCycles(ctx context.Context, cl *cluster.Cluster, admin *redis.Client, conn cluster.ClientOptions, clients int, d time.Duration, p keyspace.Prefix) float64 {
	sc := lockimpl.ReleaseScript()
	if err := sc.Load(ctx, admin).Err(); err != nil {
		return 0
	}
	ep := cl.Endpoints()[0]
	var cycles atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i := 0; i < clients; i++ {
		c := cl.NewClient(ep, conn)
		key := p.Aux(fmt.Sprintf("bare:%d", i))
		keys := []string{key, lockimpl.ReleaseChannel(key)}
		tok := any(lockimpl.NewToken()) // boxed once: no allocation a command
		wg.Go(func() {
			defer c.Close()
			for time.Now().Before(end) && ctx.Err() == nil && !failed.Load() {
				if ok, err := c.SetNX(ctx, key, tok, 10*time.Second).Result(); err != nil || !ok {
					failed.Store(true)
				} else if n, err := sc.EvalSha(ctx, c, keys, tok).Int(); err != nil || n != 1 {
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

// RedisBenchmark runs redis-benchmark (if installed) for the two commands of
// the simple lock's cycle with the same number of connections; 0 when it is
// not available.
func RedisBenchmark(ctx context.Context, addr string, clients int, p keyspace.Prefix) (setnx, evalsha float64) {
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
	tok := lockimpl.NewToken() // a lock token's length, as the locks send
	setnx = run("SET", key, tok, "NX", "PX", "10000")
	c := redis.NewClient(&redis.Options{Addr: addr})
	sha, err := lockimpl.ReleaseScript().Load(ctx, c).Result()
	c.Close()
	if err != nil {
		return setnx, 0
	}
	evalsha = run("EVALSHA", sha, "2", key, lockimpl.ReleaseChannel(key), tok)
	return setnx, evalsha
}

// Machine describes the machine a bench ran on: cores, CPU model, the
// redis-server on PATH.
func Machine() string {
	parts := []string{fmt.Sprintf("%d cores", runtime.NumCPU())}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				parts = append(parts, strings.TrimSpace(v))
				break
			}
		}
	}
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		// "Redis server v=7.0.15 sha=... malloc=..."
		for _, f := range strings.Fields(string(out)) {
			if v, ok := strings.CutPrefix(f, "v="); ok {
				parts = append(parts, "Redis "+v)
			}
		}
	}
	return strings.Join(parts, ", ")
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
