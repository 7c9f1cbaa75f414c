package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/metrics"
)

func TestWriteText(t *testing.T) {
	r, err := metrics.ReadResults("metrics/testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	r.Scenario, r.Lock, r.Backend, r.Topology, r.Seed, r.ExitCode = "gc-pause", "simple", "process", "single", 7, 1
	r.Verdict, r.Outcome = "invalid", "unexpected"
	r.Expected = map[string]string{"fencing": "valid"}
	r.Violations = []checker.Violation{{Check: "fencing", Key: "k0", Clients: []int{1, 3}, AtMS: 1234.5,
		Cause: "expired during pause", Explanation: "client 1 was paused past its TTL"}}
	r.Thresholds = metrics.EvalThresholds([]string{"acquire.p99 < 5ms", "throughput > 7000", "nonsense"}, r)
	r.Notes = []string{"backend auto: process"}
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"gc-pause · lock simple · backend process · topology single · seed 7",
		"verdict: INVALID (unexpected) · exit 1",
		"fencing", "expected valid: NOT AS EXPECTED",
		"1. fencing on k0, clients 1,3, at 1234.5 ms: expired during pause",
		"client 1 was paused past its TTL",
		"throughput: 6000 cycles/s",
		"PASS  acquire.p99 < 5ms (4ms)",
		"FAIL  throughput > 7000 (6000)",
		"ERROR nonsense: threshold",
		"note: backend auto: process",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The latency table is aligned: every row has its p99 at the same column.
	var cols []int
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "latency") || strings.HasPrefix(strings.TrimSpace(line), "acquire ") || strings.HasPrefix(strings.TrimSpace(line), "cycle ") {
			cols = append(cols, utf8.RuneCountInString(line))
		}
	}
	if len(cols) != 3 || cols[0] != cols[1] || cols[1] != cols[2] {
		t.Errorf("latency table not aligned (line widths %v):\n%s", cols, out)
	}
}
