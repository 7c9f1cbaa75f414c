package runner

import (
	"strings"
	"testing"
)

// The reported run is the one with the median throughput, every run's
// throughput is kept, and the recording-off number is its own median.
func TestMedianRun(t *testing.T) {
	runs := []*BenchLock{{Dir: "a", Throughput: 300}, {Dir: "b", Throughput: 100}, {Dir: "c", Throughput: 200}}
	bl := medianRun(runs, []float64{330, 310, 900})
	if bl.Dir != "c" || bl.Throughput != 200 || len(bl.Runs) != 3 || bl.NoHistoryThroughput != 330 {
		t.Fatalf("median run %+v, want dir c (200/s), 3 runs, recording off 330", bl)
	}
	one := medianRun(runs[:1], nil)
	if one.Dir != "a" || one.Runs != nil || one.NoHistoryThroughput != 0 {
		t.Fatalf("single run %+v: want it as is, no runs list", one)
	}
	md := BenchMarkdown(&Bench{Repeat: 3, Locks: []BenchLock{bl}})
	if !strings.Contains(md, "| 200 (100–300) |") || !strings.Contains(md, "ran 3 times") {
		t.Fatalf("markdown does not show the median and spread:\n%s", md)
	}
}
