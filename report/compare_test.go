package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/metrics"
)

func TestCompareOutput(t *testing.T) {
	base, err := metrics.ReadResults("metrics/testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	base.Scenario, base.Lock = "smoke", "simple"
	cur := *base
	cur.Checks = map[string]checker.CheckResult{"mutex": {Verdict: "invalid"}, "fencing": base.Checks["fencing"]}
	base.Stats.Throughput *= 3
	c := metrics.Compare(base, &cur, 0)
	if c.MaxRegression != metrics.DefaultMaxRegression {
		t.Errorf("max regression = %v, want the default", c.MaxRegression)
	}
	var txt, md bytes.Buffer
	if err := WriteCompareText(&txt, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteCompareMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"REGRESSED", "throughput", "-66.7%", "mutex", "WORSE", "acquire.p99"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(md.String(), "| metric | baseline | current |") {
		t.Errorf("markdown has no table:\n%s", md.String())
	}
}
