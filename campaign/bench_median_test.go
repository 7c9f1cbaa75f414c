package campaign

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/report"
)

// The reported run is the one with the median throughput, every run's
// throughput is kept, and the recording-off number is its own median.
func TestMedianRun(t *testing.T) {
	runs := []*BenchLock{{Dir: "a", Throughput: 300}, {Dir: "b", Throughput: 100}, {Dir: "c", Throughput: 200}}
	bl := medianRun(runs, []float64{330, 310, 900})
	if bl.Dir != "c" || bl.Throughput != 200 || len(bl.Runs) != 3 || bl.NoHistoryThroughput != 330 {
		t.Fatalf("median run %+v, want dir c (200/s), 3 runs, recording off 330", bl)
	}
	// Pairs (300, 330), (100, 310), (200, 900): costs 9.1%, 67.7%, 77.8%.
	if bl.RecordingCostPct != 67.74 {
		t.Errorf("recording cost %v%%, want the median pair's 67.74%%", bl.RecordingCostPct)
	}
	one := medianRun(runs[:1], nil)
	if one.Dir != "a" || one.Runs != nil || one.NoHistoryThroughput != 0 {
		t.Fatalf("single run %+v: want it as is, no runs list", one)
	}
	md := report.BenchMarkdown(&Bench{Repeat: 3, Locks: []BenchLock{bl}, SetNXPX: 2000, EvalSHA: 2000, CeilingCS: 1000,
		CeilingRuns: []float64{900, 1000, 1100}, GoRedisCS: 800, GoRedisRuns: []float64{700, 800, 850}})
	for _, want := range []string{"| 200 (100–300) |", "ran 3 times", "1000 cycles/s (median of 3, spread 900–1100)",
		"800 cycles/s (median of 3, spread 700–850) = 0.80 of the ceiling", "| 0.20 |", "+67.7% (off: 310–900)"} {
		if !strings.Contains(md, want) {
			t.Fatalf("markdown lacks %q:\n%s", want, md)
		}
	}
	if m := median([]float64{3, 1, 2, 4}); m != 2 {
		t.Errorf("median of 1..4 = %v, want the lower middle 2", m)
	}
}
