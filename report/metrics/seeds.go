package metrics

import (
	"fmt"
	"math"
	"strings"
)

// The multi-seed document: seeds.json's runs and rates. report renders it
// (seeds.md, an index report.html).

// Wilson is the 95% Wilson score interval for hits successes in n trials:
// unlike the normal approximation it stays inside [0, 1] and is not a
// zero-width interval at 0/n or n/n, which is what a few seeds give.
func Wilson(hits, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p := float64(hits) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return math.Max(0, center-half), math.Min(1, center+half)
}

// Rate is how often a check had one verdict over the seeds.
type Rate struct {
	Verdict string  `json:"verdict"`
	Hits    int     `json:"hits"`
	N       int     `json:"n"`
	Low     float64 `json:"ci95_low"`
	High    float64 `json:"ci95_high"`
}

func (r Rate) String() string {
	return fmt.Sprintf("%s in %d/%d (95%% CI %.2f–%.2f)", r.Verdict, r.Hits, r.N, r.Low, r.High)
}

// SeedRun is one seed's run of a multi-seed run or matrix cell.
type SeedRun struct {
	Seed     uint64            `json:"seed"`
	Dir      string            `json:"dir"`
	Verdict  string            `json:"verdict,omitempty"`
	Checks   map[string]string `json:"checks,omitempty"`
	Outcome  string            `json:"outcome"` // of this seed alone, as in its results.json
	ExitCode int               `json:"exit_code"`
	Error    string            `json:"error,omitempty"`
	// Attempts is how many runs the seed took (matrix --retries), and
	// Notes what the earlier attempts were.
	Attempts int      `json:"attempts,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	// Phases is where the seed's run spent its time.
	Phases *Phases `json:"phases_ms,omitempty"`
}

// SeedSummary aggregates the seeds of one scenario × lock.
type SeedSummary struct {
	Scenario string            `json:"scenario"`
	Lock     string            `json:"lock"`
	Seeds    []uint64          `json:"seeds"`
	Runs     []SeedRun         `json:"runs"`
	Expected map[string]string `json:"expected,omitempty"`
	// Rates per check: one entry per verdict seen, the expected verdict's
	// (else invalid's) first.
	Rates map[string][]Rate `json:"rates"`
	// Verdicts over all seeds: how many runs ended valid/invalid/unknown.
	Verdicts map[string]int `json:"verdicts"`
	// Outcome over the seeds: as-expected when every plain expectation held
	// on every seed and every rate expectation's rate was met.
	Outcome    string   `json:"outcome"`
	Mismatches []string `json:"mismatches,omitempty"`
	ExitCode   int      `json:"exit_code"`
}

// Agreed is the verdict every seed had, or "" when they differ.
func (s *SeedSummary) Agreed() string {
	if len(s.Verdicts) == 1 {
		for v := range s.Verdicts {
			return v
		}
	}
	return ""
}

// RateText is a check's rates in one line: "invalid in 9/10 (95% CI
// 0.60–0.98), valid in 1/10 (...)".
func (s *SeedSummary) RateText(check string) string {
	var parts []string
	for _, r := range s.Rates[check] {
		if r.Hits > 0 || len(parts) == 0 {
			parts = append(parts, r.String())
		}
	}
	return strings.Join(parts, ", ")
}

// Label is a short cell label: the verdict when every seed agrees, else
// the overall verdicts' counts ("invalid 2/3").
func (s *SeedSummary) Label() string {
	if v := s.Agreed(); v != "" {
		return v
	}
	v := s.Majority()
	return fmt.Sprintf("%s %d/%d", v, s.Verdicts[v], len(s.Runs))
}

// Majority is the most common overall verdict (ties: invalid, unknown,
// valid, error first).
func (s *SeedSummary) Majority() string {
	best := ""
	for _, v := range []string{"invalid", "unknown", "valid", "error"} {
		if s.Verdicts[v] > s.Verdicts[best] || best == "" && s.Verdicts[v] > 0 {
			best = v
		}
	}
	return best
}
