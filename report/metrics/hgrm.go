package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// WriteHgrm writes h (values in ns) in HdrHistogram's percentile
// distribution text format (what Java's outputPercentileDistribution
// prints, 5 ticks per half distance), with values in microseconds. The
// first line is a '#' comment naming the operation and the unit; tools that
// read .hgrm files (HdrHistogram's plotFiles, HistogramLogAnalyzer) skip
// '#' lines.
func WriteHgrm(w io.Writer, op string, h *hdrhistogram.Histogram) error {
	bw := bufio.NewWriter(w)
	const scale = 1e3 // ns → µs
	fmt.Fprintf(bw, "#[lockchaos %s latency; Value in microseconds (us)]\n", op)
	fmt.Fprintf(bw, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")
	if h.TotalCount() > 0 {
		for _, b := range h.CumulativeDistributionWithTicks(5) {
			p := b.Quantile / 100
			v := float64(b.ValueAt) / scale
			if p >= 1 {
				fmt.Fprintf(bw, "%12.3f %2.12f %10d\n", v, 1.0, b.Count)
				continue
			}
			fmt.Fprintf(bw, "%12.3f %2.12f %10d %14.2f\n", v, p, b.Count, 1/(1-p))
		}
	}
	mean, sd := h.Mean()/scale, h.StdDev()/scale
	if math.IsNaN(mean) {
		mean = 0
	}
	if math.IsNaN(sd) {
		sd = 0
	}
	snap := h.Export()
	buckets := bucketCount(snap)
	fmt.Fprintf(bw, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", mean, sd)
	fmt.Fprintf(bw, "#[Max     = %12.3f, Total count    = %12d]\n", float64(h.Max())/scale, h.TotalCount())
	fmt.Fprintf(bw, "#[Buckets = %12d, SubBuckets     = %12d]\n", buckets, subBucketCount(snap))
	return bw.Flush()
}

// bucketCount and subBucketCount recompute the geometry HdrHistogram
// prints in the footer (the Go library keeps it private).
func subBucketCount(s *hdrhistogram.Snapshot) int64 {
	largest := 2 * math.Pow10(int(s.SignificantFigures))
	mag := int(math.Ceil(math.Log2(largest)))
	return 1 << uint(mag)
}

func bucketCount(s *hdrhistogram.Snapshot) int64 {
	sub := subBucketCount(s)
	unitMag := int64(math.Floor(math.Log2(float64(s.LowestTrackableValue))))
	smallestUntrackable := sub << uint(unitMag)
	n := int64(1)
	for smallestUntrackable <= s.HighestTrackableValue {
		if smallestUntrackable > math.MaxInt64/2 {
			return n + 1
		}
		smallestUntrackable <<= 1
		n++
	}
	return n
}

// WriteHgrmFile writes <path> atomically.
func WriteHgrmFile(path, op string, h *hdrhistogram.Histogram) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := WriteHgrm(f, op, h); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
