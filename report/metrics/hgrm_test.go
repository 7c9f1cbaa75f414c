package metrics

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestWriteHgrm(t *testing.T) {
	h := newHist()
	for i := int64(1); i <= 10000; i++ {
		record(h, i*1000) // 1µs .. 10ms
	}
	var buf bytes.Buffer
	if err := WriteHgrm(&buf, "acquire", h); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "#") || !strings.Contains(lines[0], "microseconds") {
		t.Errorf("first line should be a comment stating the unit: %q", lines[0])
	}
	header := regexp.MustCompile(`^\s+Value\s+Percentile\s+TotalCount\s+1/\(1-Percentile\)$`)
	if !header.MatchString(lines[1]) || lines[2] != "" {
		t.Errorf("header = %q, %q", lines[1], lines[2])
	}
	row := regexp.MustCompile(`^\s*(\d+\.\d{3}) (\d\.\d{12})\s+(\d+)\s+(\d+\.\d{2})$`)
	last := regexp.MustCompile(`^\s*(\d+\.\d{3}) (1\.000000000000)\s+(\d+)$`)
	var rows int
	var prevP float64
	var prevCount int64
	i := 3
	for ; i < len(lines) && !strings.HasPrefix(lines[i], "#"); i++ {
		m := row.FindStringSubmatch(lines[i])
		if m == nil {
			if last.MatchString(lines[i]) {
				i++
				break
			}
			t.Fatalf("line %d not a percentile row: %q", i+1, lines[i])
		}
		p, _ := strconv.ParseFloat(m[2], 64)
		n, _ := strconv.ParseInt(m[3], 10, 64)
		inv, _ := strconv.ParseFloat(m[4], 64)
		if p < prevP || n < prevCount {
			t.Errorf("line %d: percentile or count went down", i+1)
		}
		if want := 1 / (1 - p); inv < want*0.99 || inv > want*1.01 {
			t.Errorf("line %d: 1/(1-p) = %v, want %v", i+1, inv, want)
		}
		if rows == 0 && (p != 0 || n != 1) {
			t.Errorf("first row = %q, want percentile 0 with count 1", lines[i])
		}
		prevP, prevCount = p, n
		rows++
	}
	if rows < 20 {
		t.Errorf("only %d percentile rows", rows)
	}
	if m := last.FindStringSubmatch(lines[i-1]); m == nil || m[3] != "10000" {
		t.Errorf("last row = %q, want percentile 1 with count 10000", lines[i-1])
	}
	footer := lines[i:]
	if len(footer) != 3 {
		t.Fatalf("footer = %q", footer)
	}
	for j, re := range []string{
		`^#\[Mean    =\s+5000\.\d{3}, StdDeviation   =\s+\d+\.\d{3}\]$`,
		`^#\[Max     =\s+10\d{3}\.\d{3}, Total count    =\s+10000\]$`,
		`^#\[Buckets =\s+\d+, SubBuckets     =\s+2048\]$`,
	} {
		if !regexp.MustCompile(re).MatchString(footer[j]) {
			t.Errorf("footer line %q does not match %s", footer[j], re)
		}
	}
	// The median is 5ms, in µs.
	if !strings.Contains(buf.String(), "5001.") && !strings.Contains(buf.String(), "5000.") {
		t.Errorf("no 5ms median row:\n%s", buf.String())
	}
}

func TestWriteHgrmEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHgrm(&buf, "handoff", newHist()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Total count    =            0]") {
		t.Errorf("empty histogram:\n%s", buf.String())
	}
}

func TestBucketGeometry(t *testing.T) {
	s := newHist().Export()
	// Java's HdrHistogram for 1000..60e9, 3 digits: 2048 sub-buckets, and
	// 2048 << 9 doubled 16 times covers 60e9: 17 buckets.
	if got := subBucketCount(s); got != 2048 {
		t.Errorf("sub-buckets = %d", got)
	}
	if got := bucketCount(s); got != 17 {
		t.Errorf("buckets = %d, want 17", got)
	}
}
