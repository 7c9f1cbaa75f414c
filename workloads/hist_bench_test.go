package workloads

import "testing"

// BenchmarkHistogramRecord is the cost of recording one latency in a
// client's histogram (three per cycle: acquire, release, cycle).
func BenchmarkHistogramRecord(b *testing.B) {
	h := newHist()
	v := int64(0)
	for b.Loop() {
		v = (v*7 + 13) % 50_000 // µs spread over the range a cycle covers
		if err := h.RecordValue(v + 1); err != nil {
			b.Fatal(err)
		}
	}
}
