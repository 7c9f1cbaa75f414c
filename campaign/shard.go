package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/lockchaos/lockchaos/runner"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/scenarios"
)

// Sharding spreads a matrix over machines (a CI job matrix, Kubernetes
// Indexed Jobs): shard I of N runs a deterministic part of the applicable
// cells, balanced by each cell's expected wall time, and `matrix merge`
// puts the shards' matrix.json files back together. Every shard writes the
// whole table; the cells another shard runs are marked OutcomeElsewhere.

// ParseShard parses "I/N" (1 <= I <= N <= 1000).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 1000 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%q is not I/N with 1 <= I <= N <= 1000 (e.g. 2/3)", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// BuildID names the running harness build: its VCS revision (with
// "+dirty" for a modified tree), else (built with -buildvcs=false, or
// outside a repository) a hash of its executable.
func BuildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return exeHash()
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return exeHash()
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

func exeHash() string {
	p, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	f, err := os.Open(p)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown"
	}
	return "exe-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// catalogHash hashes the scenarios as the matrix runs them.
func catalogHash(list []*scenarios.Scenario) string {
	h := sha256.New()
	for _, s := range list {
		b, _ := yaml.Marshal(s)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// cellCost estimates a cell's wall time: the scenario's run plus the
// harness's start and check, and what forming and healing its topology adds
// (measured phases: a sentinel failover cell spends 2.2 s starting, 6 s
// healing while the old master resyncs and 2 s stopping; a Redis Cluster
// cell about 4 s forming and stopping its six nodes).
func cellCost(s *scenarios.Scenario) time.Duration {
	extra := map[string]time.Duration{"sentinel": 8 * time.Second, "cluster": 4 * time.Second}[s.Topology]
	return s.Duration + s.Recovery + 2*time.Second + extra
}

// shardOf assigns the applicable cells (indexes into cells, with their
// scenarios) to count shards: longest first, each to the least loaded
// shard (the lowest index on ties). Deterministic for the same cells.
func shardOf(cells []int, cost func(i int) time.Duration, count int) map[int]int {
	order := slices.Clone(cells)
	sort.SliceStable(order, func(a, b int) bool { return cost(order[a]) > cost(order[b]) })
	load := make([]time.Duration, count)
	out := make(map[int]int, len(cells))
	for _, i := range order {
		best := 0
		for k := 1; k < count; k++ {
			if load[k] < load[best] {
				best = k
			}
		}
		load[best] += cost(i)
		out[i] = best + 1
	}
	return out
}

// MergeShards reads the matrix.json of every shard directory and combines
// them into one matrix: each cell from the shard that ran it, the exit code
// by the same rules as an unsharded run. Shards of different builds,
// catalogs, seeds, locks or shard counts are refused, naming the mismatch,
// as are a missing or repeated shard.
func MergeShards(dirs []string) (*Matrix, error) {
	if len(dirs) == 0 {
		return nil, fail(runner.BadInput, "matrix merge: no shard directories given")
	}
	var ms []*Matrix
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "matrix.json"))
		if err != nil {
			return nil, fail(runner.BadInput, "matrix merge: %w", err)
		}
		m := &Matrix{}
		if err := json.Unmarshal(b, m); err != nil {
			return nil, fail(runner.BadInput, "matrix merge: %s: %w", filepath.Join(d, "matrix.json"), err)
		}
		if m.Shard == nil {
			return nil, fail(runner.BadInput, "matrix merge: %s is not a shard (it ran whole, not as a shard)", d)
		}
		ms = append(ms, m)
	}
	first := ms[0]
	seen := map[int]string{}
	for i, m := range ms {
		d := dirs[i]
		switch {
		case m.Shard.Count != first.Shard.Count:
			return nil, fail(runner.BadInput, "matrix merge: %s is shard %d/%d, %s is of %d shards", d, m.Shard.Index, m.Shard.Count, dirs[0], first.Shard.Count)
		case m.Shard.Build != first.Shard.Build:
			return nil, fail(runner.BadInput, "matrix merge: %s ran build %s, %s build %s", d, m.Shard.Build, dirs[0], first.Shard.Build)
		case m.Shard.Catalog != first.Shard.Catalog:
			return nil, fail(runner.BadInput, "matrix merge: %s ran catalog %s, %s catalog %s (the scenarios differ)", d, m.Shard.Catalog, dirs[0], first.Shard.Catalog)
		case !slices.Equal(m.Seeds, first.Seeds):
			return nil, fail(runner.BadInput, "matrix merge: %s ran seeds %v, %s seeds %v", d, m.Seeds, dirs[0], first.Seeds)
		case !slices.Equal(m.Locks, first.Locks) || !slices.Equal(m.Scenarios, first.Scenarios) || len(m.Cells) != len(first.Cells):
			return nil, fail(runner.BadInput, "matrix merge: %s ran locks %v × scenarios %v, %s locks %v × scenarios %v", d, m.Locks, m.Scenarios, dirs[0], first.Locks, first.Scenarios)
		}
		if prev, dup := seen[m.Shard.Index]; dup {
			return nil, fail(runner.BadInput, "matrix merge: shard %d/%d given twice (%s and %s)", m.Shard.Index, m.Shard.Count, prev, d)
		}
		seen[m.Shard.Index] = d
	}
	var missing []string
	for k := 1; k <= first.Shard.Count; k++ {
		if _, ok := seen[k]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", k, first.Shard.Count))
		}
	}
	if len(missing) > 0 {
		return nil, fail(runner.BadInput, "matrix merge: shard %s missing", strings.Join(missing, ", "))
	}
	out := &Matrix{Locks: first.Locks, Scenarios: first.Scenarios, Seeds: first.Seeds, Cells: slices.Clone(first.Cells)}
	for i := range out.Cells {
		for _, m := range ms {
			c := m.Cells[i]
			if c.Scenario != out.Cells[i].Scenario || c.Lock != out.Cells[i].Lock {
				return nil, fail(runner.BadInput, "matrix merge: cell %d is %s/%s in one shard and %s/%s in another", i, c.Scenario, c.Lock, out.Cells[i].Scenario, out.Cells[i].Lock)
			}
			if c.Outcome != OutcomeElsewhere {
				out.Cells[i] = c
				break
			}
		}
		if out.Cells[i].Outcome == OutcomeElsewhere {
			return nil, fail(runner.BadInput, "matrix merge: no shard ran %s/%s", out.Cells[i].Scenario, out.Cells[i].Lock)
		}
	}
	out.ExitCode = int(matrixClass(out.Cells, false))
	return out, nil
}

// matrixClass is how a matrix came out: violated if any cell was unexpected
// (or failed), else unknown if any was or the run was cut short, else passed.
func matrixClass(cells []Cell, cut bool) runner.Class {
	unexpected, unknown := false, cut
	for _, c := range cells {
		switch c.Outcome {
		case "unexpected", "error":
			unexpected = true
		case "unknown":
			unknown = true
		}
	}
	switch {
	case unexpected:
		return runner.Violated
	case unknown:
		return runner.Unknown
	}
	return runner.Passed
}
