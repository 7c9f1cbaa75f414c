package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/keyspace"
)

// Worker makes a run one worker of a run spread over processes or machines
// (lockchaos worker): worker Index of Count drives clients Index,
// Index+Count, ... of the scenario against an external deployment. The
// workers meet at a barrier kept in Redis itself (keys
// lc:<RunID>#workers:*, beside the run's prefix lc:<RunID>:), start their
// workloads at one instant of the server's clock, and each writes its own
// run directory with its clock's offset to the server's TIME measured at
// the start and at the end (worker.json); Merge joins them into one run.
//
// Worker 0 is the coordinator: it alone runs the keyspace observer, fires
// the faults that name no client of another worker (holder, random-client,
// any-client: among its own clients), and removes the run's keys once every
// worker is done. A fault aimed at client:N fires in N's worker.
type Worker struct {
	Index, Count int
	// RunID is the run every worker shares (the same on each).
	RunID string
	// Wait bounds each barrier (every worker joined; every worker done).
	// Default 2 minutes.
	Wait time.Duration
	// ClockOffset shifts this worker's wall clock (tests: a host whose
	// clock is wrong by that much; merging must correct it).
	ClockOffset time.Duration
}

// WorkerFile is the worker's account of its part, in its run directory.
const WorkerFile = "worker.json"

// ClockSample is one measurement of the server's TIME against the
// worker's wall clock: the server's clock is local + OffsetNS, within
// ±ErrorNS (half the round trip of the best of several probes, plus
// TIME's microsecond resolution).
type ClockSample struct {
	OffsetNS int64 `json:"offset_ns"`
	ErrorNS  int64 `json:"error_ns"`
	// RunNS is when it was taken, in the worker's run time.
	RunNS int64 `json:"run_ns"`
	RTTNS int64 `json:"rtt_ns"`
}

// WorkerInfo is worker.json.
type WorkerInfo struct {
	RunID    string `json:"run_id"`
	Index    int    `json:"index"`
	Count    int    `json:"count"`
	Clients  []int  `json:"clients"`
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Seed     uint64 `json:"seed"`
	// StartUnixNS is the worker's run start on its own wall clock (the
	// history's start_unix_ns); ServerStartNS the agreed start on the
	// server's clock.
	StartUnixNS   int64       `json:"start_unix_ns"`
	ServerStartNS int64       `json:"server_start_ns"`
	Start         ClockSample `json:"clock_start"`
	End           ClockSample `json:"clock_end"`
}

// Uncertainty is the error bound of this worker's times mapped onto the
// server's clock: the worse of the two samples' errors plus how far the
// offset moved between them (the mapping interpolates linearly).
func (wi WorkerInfo) Uncertainty() int64 {
	d := wi.End.OffsetNS - wi.Start.OffsetNS
	return max(wi.Start.ErrorNS, wi.End.ErrorNS) + max(d, -d)
}

// ServerNS maps a time of this worker's run (ns) onto the server's clock.
func (wi WorkerInfo) ServerNS(t int64) int64 {
	off := wi.Start.OffsetNS
	if span := wi.End.RunNS - wi.Start.RunNS; span > 0 {
		f := float64(t-wi.Start.RunNS) / float64(span)
		f = min(max(f, 0), 1)
		off += int64(f * float64(wi.End.OffsetNS-wi.Start.OffsetNS))
	}
	return wi.StartUnixNS + t + off
}

// Check refuses a worker that cannot run: its index out of 0..Count-1,
// more workers than the scenario's clients, a backend other than external,
// a key prefix of its own (the run id names the keys), a bad run id.
func (w *Worker) Check(clients int, o Options) error {
	switch {
	case w.Count < 1:
		return badField("workers", "%d: at least 1", w.Count)
	case w.Index < 0 || w.Index >= w.Count:
		return badField("index", "%d is not in 0..%d (%d workers)", w.Index, w.Count-1, w.Count)
	case w.Count > clients:
		return badField("workers", "%d workers for %d clients: every worker needs a client", w.Count, clients)
	case o.Backend != cluster.External:
		return badField("backend", "%q: workers run against an external deployment (its addresses)", o.Backend)
	case o.KeyPrefix != "":
		return badField("key-prefix", "workers name their keys by their run id (lc:<run id>:)")
	}
	if w.RunID == "" || strings.ContainsAny(w.RunID, "#:*?[]\\") {
		return badField("run-id", "%q: every worker needs the same run id, without # : * ? [ ] \\", w.RunID)
	}
	if err := keyspace.Check(w.RunID); err != nil {
		return badField("run-id", "%w", err)
	}
	return nil
}

// ids are the worker's clients: Index, Index+Count, ...
func (w *Worker) ids(clients int) []int {
	var out []int
	for id := w.Index; id < clients; id += w.Count {
		out = append(out, id)
	}
	return out
}

// owns says whether this worker fires a scheduled fault: one aimed at
// client:N fires in N's worker, every other in the coordinator.
func (w *Worker) owns(f faults.Scheduled) bool {
	if n, ok := strings.CutPrefix(f.Spec.Target, "client:"); ok {
		if id, err := strconv.Atoi(n); err == nil {
			return id%w.Count == w.Index
		}
	}
	if n, ok := strings.CutPrefix(f.Spec.When, "client:"); ok && f.Spec.Target == "" {
		id, _, _ := strings.Cut(n, " ")
		if id, err := strconv.Atoi(id); err == nil {
			return id%w.Count == w.Index
		}
	}
	return w.Index == 0
}

func (w *Worker) key(name string) string { return "lc:" + w.RunID + "#workers:" + name }

func (w *Worker) now() time.Time { return time.Now().Add(w.ClockOffset) }

func (w *Worker) wait() time.Duration {
	if w.Wait > 0 {
		return w.Wait
	}
	return 2 * time.Minute
}

// measureClock probes the server's TIME a few times and keeps the probe
// with the shortest round trip.
func (w *Worker) measureClock(ctx context.Context, c *redis.Client, runNow func() int64) (ClockSample, error) {
	best := ClockSample{RTTNS: -1}
	for range 7 {
		t0 := w.now()
		st, err := c.Time(ctx).Result()
		t1 := w.now()
		if err != nil {
			return best, fmt.Errorf("server TIME: %w", err)
		}
		rtt := t1.Sub(t0)
		if best.RTTNS < 0 || int64(rtt) < best.RTTNS {
			mid := t0.Add(rtt / 2)
			// TIME answers in microseconds: its own error is below 1 µs.
			best = ClockSample{OffsetNS: st.UnixNano() - mid.UnixNano(), ErrorNS: int64(rtt/2) + 1000, RTTNS: int64(rtt), RunNS: runNow()}
		}
	}
	return best, nil
}

// join waits until every worker joined, then until the agreed start (on
// the server's clock, 500 ms after the last joined, mapped onto this
// worker's clock with a fresh measurement). It returns the start on the
// server's clock and that measurement (the worker's start sample).
func (w *Worker) join(ctx context.Context, c *redis.Client, runNow func() int64) (int64, ClockSample, error) {
	var none ClockSample
	ttl := 2*w.wait() + 10*time.Minute
	if added, err := c.SAdd(ctx, w.key("joined"), w.Index).Result(); err != nil {
		return 0, none, fmt.Errorf("worker barrier: %w", err)
	} else if added == 0 {
		return 0, none, &Error{Class: BadInput, Field: "index", Err: fmt.Errorf("worker %d of run %s has already joined (two workers with one index?)", w.Index, w.RunID)}
	}
	c.PExpire(ctx, w.key("joined"), ttl)
	n, err := c.SCard(ctx, w.key("joined")).Result()
	if err != nil {
		return 0, none, fmt.Errorf("worker barrier: %w", err)
	}
	if n == int64(w.Count) {
		st, err := c.Time(ctx).Result()
		if err != nil {
			return 0, none, fmt.Errorf("worker barrier: server TIME: %w", err)
		}
		start := st.Add(500 * time.Millisecond).UnixNano()
		if err := c.SetNX(ctx, w.key("start"), start, ttl).Err(); err != nil {
			return 0, none, fmt.Errorf("worker barrier: %w", err)
		}
	}
	deadline := time.Now().Add(w.wait())
	for {
		v, err := c.Get(ctx, w.key("start")).Int64()
		if err == nil {
			cs, err := w.measureClock(ctx, c, runNow)
			if err != nil {
				return 0, none, fmt.Errorf("worker clock: %w", err)
			}
			local := time.Unix(0, v-cs.OffsetNS) // on this worker's (shifted) clock
			if d := local.Sub(w.now()); d > 0 && !wait(ctx, d) {
				return 0, none, ctx.Err()
			}
			return v, cs, nil
		}
		if !errors.Is(err, redis.Nil) {
			return 0, none, fmt.Errorf("worker barrier: %w", err)
		}
		if time.Now().After(deadline) {
			joined, _ := c.SMembers(ctx, w.key("joined")).Result()
			return 0, none, &Error{Class: Infra, Err: fmt.Errorf("worker barrier: %d of %d workers joined run %s within %v (joined: %s)",
				len(joined), w.Count, w.RunID, w.wait(), strings.Join(joined, ", "))}
		}
		if !wait(ctx, 20*time.Millisecond) {
			return 0, none, ctx.Err()
		}
	}
}

// done says this worker's workload ended; the coordinator waits until
// every worker said so (bounded by Wait), so that its observer sees every
// worker's last steps and its clean-up removes no key a worker still uses.
func (w *Worker) done(ctx context.Context, c *redis.Client) string {
	ctx = context.WithoutCancel(ctx)
	if err := c.SAdd(ctx, w.key("done"), w.Index).Err(); err != nil {
		return "worker barrier (done): " + err.Error()
	}
	c.PExpire(ctx, w.key("done"), 2*w.wait()+10*time.Minute)
	if w.Index != 0 {
		return ""
	}
	deadline := time.Now().Add(w.wait())
	for time.Now().Before(deadline) {
		if n, err := c.SCard(ctx, w.key("done")).Result(); err == nil && n >= int64(w.Count) {
			c.Del(ctx, w.key("joined"), w.key("start"), w.key("done"))
			return ""
		}
		time.Sleep(20 * time.Millisecond)
	}
	n, _ := c.SCard(ctx, w.key("done")).Result()
	return fmt.Sprintf("coordinator: %d of %d workers said done within %v; the observer and the clean-up stopped without the others", n, w.Count, w.wait())
}

func writeWorkerInfo(dir string, wi WorkerInfo) error {
	b, err := json.MarshalIndent(wi, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, WorkerFile), append(b, '\n'), 0o644)
}

// ReadWorkerInfo reads a worker's run directory's worker.json.
func ReadWorkerInfo(dir string) (WorkerInfo, error) {
	var wi WorkerInfo
	b, err := os.ReadFile(filepath.Join(dir, WorkerFile))
	if err != nil {
		return wi, fmt.Errorf("%s is not a worker's run directory: %w", dir, err)
	}
	if err := json.Unmarshal(b, &wi); err != nil {
		return wi, fmt.Errorf("%s: %w", filepath.Join(dir, WorkerFile), err)
	}
	return wi, nil
}
