package metrics

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MatrixFile is the matrix document in a matrix directory.
const MatrixFile = "matrix.json"

// ReadMatrix reads dir/matrix.json.
func ReadMatrix(dir string) (*Matrix, error) {
	p := filepath.Join(dir, MatrixFile)
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m Matrix
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &m, nil
}

// MatrixDiff is one run's check whose verdict differs between two matrices.
type MatrixDiff struct {
	Scenario, Lock string
	Seed           uint64 // 0: a cell run without seeds
	Check          string
	Base, Cur      string // the verdicts ("" where the run has no such check)
	BaseDir        string
	CurDir         string
}

// Run names the diff's run: scenario/lock, and its seed.
func (d MatrixDiff) Run() string { return matrixRunName(d.Scenario, d.Lock, d.Seed) }

func matrixRunName(scenario, lock string, seed uint64) string {
	if seed == 0 {
		return scenario + "/" + lock
	}
	return fmt.Sprintf("%s/%s seed %d", scenario, lock, seed)
}

// MatrixComparison compares two matrices run by run (a cell's seeds each a
// run) and check by check: the same catalog run two ways (one cell at a
// time and packed, two builds, two machines) must give the same verdicts.
type MatrixComparison struct {
	Runs   int // runs in both
	Checks int // checks compared
	Diffs  []MatrixDiff
	// OnlyBase and OnlyCur name the runs one matrix has and the other
	// has not.
	OnlyBase, OnlyCur []string
	// The matrices' wall times, cells at once, and their runs' own times
	// summed (phases_ms).
	BaseWallMS, CurWallMS     float64
	BaseParallel, CurParallel int
	BaseRunsMS, CurRunsMS     float64
}

// Differs reports whether any run's verdict of any check differs, or a run
// is in one matrix only.
func (c *MatrixComparison) Differs() bool {
	return len(c.Diffs) > 0 || len(c.OnlyBase) > 0 || len(c.OnlyCur) > 0
}

// matrixRun is one run of a matrix: its checks' verdicts and its time.
type matrixRun struct {
	checks map[string]string
	dir    string
	ms     float64
}

// runKey names a run: its cell and its seed (0: a cell without seeds).
type runKey struct {
	scenario, lock string
	seed           uint64
}

func matrixRuns(m *Matrix) (map[runKey]matrixRun, float64) {
	runs := map[runKey]matrixRun{}
	total := 0.0
	for _, c := range m.Cells {
		if !c.Applicable || c.Outcome == OutcomeElsewhere {
			continue
		}
		if len(c.Seeds) == 0 {
			r := matrixRun{checks: c.Checks, dir: c.Dir, ms: phasesTotal(c.Phases)}
			runs[runKey{c.Scenario, c.Lock, 0}] = r
			total += r.ms
			continue
		}
		for _, s := range c.Seeds {
			r := matrixRun{checks: s.Checks, dir: s.Dir, ms: phasesTotal(s.Phases)}
			runs[runKey{c.Scenario, c.Lock, s.Seed}] = r
			total += r.ms
		}
	}
	return runs, total
}

// CompareMatrices compares cur with base.
func CompareMatrices(base, cur *Matrix) *MatrixComparison {
	br, bms := matrixRuns(base)
	cr, cms := matrixRuns(cur)
	c := &MatrixComparison{BaseWallMS: base.WallMS, CurWallMS: cur.WallMS, BaseParallel: base.Parallel, CurParallel: cur.Parallel,
		BaseRunsMS: bms, CurRunsMS: cms}
	keys := slices.Collect(maps.Keys(br))
	for k := range cr {
		if _, ok := br[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b runKey) int {
		return cmp.Or(strings.Compare(a.scenario, b.scenario), strings.Compare(a.lock, b.lock), cmp.Compare(a.seed, b.seed))
	})
	for _, k := range keys {
		b, inB := br[k]
		r, inC := cr[k]
		switch {
		case !inC:
			c.OnlyBase = append(c.OnlyBase, matrixRunName(k.scenario, k.lock, k.seed))
			continue
		case !inB:
			c.OnlyCur = append(c.OnlyCur, matrixRunName(k.scenario, k.lock, k.seed))
			continue
		}
		c.Runs++
		checks := maps.Clone(b.checks)
		if checks == nil {
			checks = map[string]string{}
		}
		maps.Copy(checks, r.checks)
		for _, ch := range slices.Sorted(maps.Keys(checks)) {
			c.Checks++
			if b.checks[ch] != r.checks[ch] {
				c.Diffs = append(c.Diffs, MatrixDiff{Scenario: k.scenario, Lock: k.lock, Seed: k.seed, Check: ch,
					Base: b.checks[ch], Cur: r.checks[ch], BaseDir: b.dir, CurDir: r.dir})
			}
		}
	}
	return c
}

func phasesTotal(p *Phases) float64 {
	if p == nil {
		return 0
	}
	return p.Total()
}
