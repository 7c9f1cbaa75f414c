package campaign

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/browser"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestCardReusesRuns makes a tiny card (one lock, two scenarios, one seed,
// a one-second bench) on the process backend, then a card with one more
// lock: the second reuses every step of the first and runs only the new
// lock's. The rendered card opens in Chromium with its plot drawn when the
// browser is installed.
func TestCardReusesRuns(t *testing.T) {
	if os.Getenv("LOCKCHAOS_LONG") == "" {
		t.Skip("long tier: LOCKCHAOS_LONG=1 runs it (scripts/test.sh does)")
	}
	var list []*scenarios.Scenario
	for _, n := range []string{"gc-pause", "holder-partitioned"} {
		s, err := scenarios.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, s)
	}
	cache := t.TempDir()
	o := CardOptions{Locks: []string{"simple"}, Scenarios: list, Seeds: []uint64{1}, Cache: cache, BenchDuration: time.Second,
		Budget: 4 * time.Minute}
	o.Setup.Backend = "process"
	var seen []CardProgress
	o.OnProgress = func(p CardProgress) {
		seen = append(seen, p)
		t.Logf("[%d/%d ~%s] reused=%v %s", p.Done, p.Total, p.Left, p.Reused, p.Doing)
	}
	first, err := RunCard(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if first.Ran.Runs != 3 || first.Ran.Reused != 0 || len(first.Ran.NotRun) != 0 {
		t.Fatalf("first card: %d steps, %d reused, not run %v; want 3 steps (2 runs, a bench), none reused", first.Ran.Runs, first.Ran.Reused, first.Ran.NotRun)
	}
	col := first.Locks[0]
	if fr := col.Safety["client-freeze"]; fr.Runs != 1 || fr.Invalid != 1 {
		t.Errorf("simple in gc-pause (client-freeze): %+v, want 1 run, invalid (the pause outlives the TTL)", fr)
	}
	if col.Bench == nil || col.Bench.Lock.Throughput <= 0 || col.Bench.GoRedisCS <= 0 {
		t.Errorf("bench: %+v, want a throughput and bare go-redis beside it", col.Bench)
	}
	if len(first.Findings) == 0 || !strings.Contains(first.Findings[0].Replay, "lockchaos run gc-pause --lock simple --seed 1") {
		t.Errorf("findings: %+v, want gc-pause with its replay command", first.Findings)
	}
	if len(seen) == 0 || seen[0].Left <= 0 {
		t.Errorf("progress: %+v, want steps with the time left", seen)
	}

	o.Locks = []string{"simple", "fenced"}
	start := time.Now()
	second, err := RunCard(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if second.Ran.Runs != 6 || second.Ran.Reused != 3 {
		t.Fatalf("second card: %d steps, %d reused; want 6, the first card's 3 reused", second.Ran.Runs, second.Ran.Reused)
	}
	t.Logf("first card %.0f s, second (one more lock) %.0f s", first.Ran.WallS, time.Since(start).Seconds())
	if got := second.Locks[0].Safety["client-freeze"]; got != col.Safety["client-freeze"] {
		t.Errorf("the reused column differs: %+v, first %+v", got, col.Safety["client-freeze"])
	}

	dir := t.TempDir()
	if err := report.WriteCard(dir, second); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "card.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| simple | fenced |", "client-freeze", "vs bare go-redis",
		// gc-pause fails both locks as the scenario expects: a limit of the
		// design, one row for the scenario with each lock's rate.
		"## Limits of the design", "| gc-pause | client-freeze | expired-during-pause | [simple 1/1](", "), [fenced 1/1]("} {
		if !strings.Contains(string(md), want) {
			t.Errorf("card.md lacks %q", want)
		}
	}
	bin := browser.Find()
	if bin == "" {
		t.Log("chromium missing: the card is not opened in a browser")
		return
	}
	r, err := browser.Open(context.Background(), bin, filepath.Join(dir, "card.html"), filepath.Join(t.ArtifactDir(), "card.png"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", r.Screenshot)
	for _, p := range r.Problems() {
		t.Error(p)
	}
}
