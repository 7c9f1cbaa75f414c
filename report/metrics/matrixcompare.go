package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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

func matrixRuns(m *Matrix) (map[[3]string]matrixRun, float64) {
	runs := map[[3]string]matrixRun{}
	total := 0.0
	for _, c := range m.Cells {
		if !c.Applicable || c.Outcome == OutcomeElsewhere {
			continue
		}
		if len(c.Seeds) == 0 {
			r := matrixRun{checks: c.Checks, dir: c.Dir, ms: phasesTotal(c.Phases)}
			runs[[3]string{c.Scenario, c.Lock, ""}] = r
			total += r.ms
			continue
		}
		for _, s := range c.Seeds {
			r := matrixRun{checks: s.Checks, dir: s.Dir, ms: phasesTotal(s.Phases)}
			runs[[3]string{c.Scenario, c.Lock, fmt.Sprint(s.Seed)}] = r
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
	keys := make([][3]string, 0, len(br))
	for k := range br {
		keys = append(keys, k)
	}
	for k := range cr {
		if _, ok := br[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a[0] != b[0] || a[1] != b[1] {
			return a[0]+"\x00"+a[1] < b[0]+"\x00"+b[1]
		}
		return len(a[2]) < len(b[2]) || len(a[2]) == len(b[2]) && a[2] < b[2]
	})
	for _, k := range keys {
		b, inB := br[k]
		r, inC := cr[k]
		var seed uint64
		fmt.Sscan(k[2], &seed)
		switch {
		case !inC:
			c.OnlyBase = append(c.OnlyBase, matrixRunName(k[0], k[1], seed))
			continue
		case !inB:
			c.OnlyCur = append(c.OnlyCur, matrixRunName(k[0], k[1], seed))
			continue
		}
		c.Runs++
		checks := map[string]bool{}
		for ch := range b.checks {
			checks[ch] = true
		}
		for ch := range r.checks {
			checks[ch] = true
		}
		names := make([]string, 0, len(checks))
		for ch := range checks {
			names = append(names, ch)
		}
		sort.Strings(names)
		for _, ch := range names {
			c.Checks++
			if b.checks[ch] != r.checks[ch] {
				c.Diffs = append(c.Diffs, MatrixDiff{Scenario: k[0], Lock: k[1], Seed: seed, Check: ch,
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
