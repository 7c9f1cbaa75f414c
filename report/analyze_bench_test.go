package report

import (
	"testing"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// BenchmarkAnalyze streams a synthetic 1M-event history; "scan" is the
// history reader alone (JSON decoding), for what Analyze adds on top.
func BenchmarkAnalyze(b *testing.B) {
	path, _ := synthRun(b, b.TempDir(), 1_000_000)
	b.Run("scan", func(b *testing.B) {
		var events int
		for b.Loop() {
			info, err := history.ScanFile(path, func(*history.Event) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			events = info.Events
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
	})
	b.Run("analyze", func(b *testing.B) {
		var events int
		for b.Loop() {
			a, err := metrics.Analyze(path, metrics.AnalyzeOptions{})
			if err != nil {
				b.Fatal(err)
			}
			events = a.Events
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
	})
}
