package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/internal/browser"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// chromium is the browser the page tests use: they skip without it unless
// LOCKCHAOS_REQUIRE_CHROMIUM=1 (CI), where a missing browser fails.
func chromium(t *testing.T) string {
	t.Helper()
	bin := browser.Find()
	if bin == "" {
		if os.Getenv("LOCKCHAOS_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium is missing and LOCKCHAOS_REQUIRE_CHROMIUM=1 (scripts/deps.sh installs it)")
		}
		t.Skip("chromium is not installed (scripts/deps.sh installs it; LOCKCHAOS_REQUIRE_CHROMIUM=1 makes this a failure)")
	}
	return bin
}

// sampleCard is a card of three locks with margins, loss detection, a
// bench and a finding: every section and both plots.
func sampleCard() *metrics.Card {
	bench := func(tp float64) *metrics.CardBench {
		return &metrics.CardBench{Lock: metrics.BenchLock{Throughput: tp, Fairness: 0.98,
			LatencyUS: map[string]metrics.Latency{"handoff": {P50: 80, P99: 900}}, Server: &metrics.ServerCost{UsecPerCycle: 5, CommandsPerCycle: 4}},
			CeilingCS: 20000, GoRedisCS: 15000, Duration: "5s", Clients: 4}
	}
	margins := func(pause float64) []metrics.CardMargin {
		return []metrics.CardMargin{
			{Template: "pause-client@before-write", Family: "client-freeze", Unit: "×TTL", At: pause, Lo: 0.05, Hi: 3},
			{Template: "clock-jump(forward)", Family: "clock", Unit: "×TTL", At: -1, Lo: 0.05, Hi: 3},
			{Template: "clock-skew-rate(slow)", Family: "clock", Unit: "rate", At: 0.8, Lo: 0.1, Hi: 0.95, Falling: true},
		}
	}
	c := &metrics.Card{Families: []string{"client-freeze", "node-loss", "clock"},
		Scenarios: []metrics.CardScenario{{Name: "gc-pause", Family: "client-freeze"}, {Name: "restart-empty", Family: "node-loss"}, {Name: "clock-jump", Family: "clock"}},
		Ran:       metrics.CardRan{Lockchaos: "test", Backend: "process", Redis: "redis 7.0.15", Machine: "2 cores", Date: "2026-11-27T00:00:00Z", Seeds: []uint64{1, 2}, WallS: 12, Runs: 9}}
	for i, l := range []string{"simple", "watchdog", "redsync"} {
		c.Locks = append(c.Locks, metrics.CardLock{Name: l, Kind: "correct", Library: "lockchaos built-in",
			Safety:  map[string]metrics.FamilyRate{"client-freeze": {Runs: 2, Invalid: 2}, "clock": {Runs: 2, Valid: 2 - i%2, Invalid: i % 2}},
			Margins: margins(1 + 0.2*float64(i)), Loss: &metrics.CardLoss{Runs: 2, Losses: 3, Never: i, P50MS: 40, P99MS: 190, MaxMS: 200},
			Bench: bench(9000 + 1000*float64(i))})
	}
	c.Findings = []metrics.CardFinding{{Lock: "simple", Scenario: "gc-pause", Family: "client-freeze", Invalid: 2, Runs: 2,
		Causes: []string{"expired-during-pause"}, Expected: true, Dir: "runs/gc-pause-simple", Replay: "lockchaos run gc-pause --lock simple --seed 1"},
		{Lock: "watchdog", Scenario: "gc-pause", Family: "client-freeze", Invalid: 1, Runs: 2,
			Causes: []string{"expired-during-pause"}, Expected: true, Dir: "runs/gc-pause-watchdog", Replay: "lockchaos run gc-pause --lock watchdog --seed 1"},
		{Lock: "redsync", Scenario: "slow-acquire", Family: "client-freeze", Invalid: 2, Runs: 2, Expected: true, Known: true,
			Causes: []string{"expired-during-pause"}, Dir: "runs/slow-acquire-redsync", Replay: "lockchaos run slow-acquire --lock redsync --seed 1"},
		{Lock: "redsync", Scenario: "smoke", Family: "none", Invalid: 1, Runs: 2,
			Causes: []string{"expired-while-held"}, Dir: "runs/smoke-redsync", Replay: "lockchaos run smoke --lock redsync --seed 2"},
		{Lock: "redsync", Scenario: "explore finding 1 (acquire-not-granted)", Family: "cut", Invalid: 3, Runs: 5, Causes: []string{"acquire-not-granted"},
			Dir: "explore/redsync/findings/1", Replay: "lockchaos run explore/redsync/findings/1/scenario.yaml --lock redsync --expect",
			Reference: "redlock 0/5", Unconfirmed: true}}
	c.Locks[0].Explored = &metrics.CardExplore{Reference: "simple", Self: true}
	c.Locks[2].Explored = &metrics.CardExplore{Budget: "1m0s", Schedules: 12, Findings: 1, Limits: 2, Reference: "redlock"}
	return c
}

// open checks page in Chromium, keeping its screenshot as a test artifact.
func open(t *testing.T, bin, page string) *browser.Result {
	t.Helper()
	shot := filepath.Join(t.ArtifactDir(), strings.TrimSuffix(filepath.Base(page), ".html")+".png")
	r, err := browser.Open(context.Background(), bin, page, shot, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s", filepath.Base(page), r.Screenshot)
	return r
}

// TestPagesInChromium opens card.html and report.html in headless
// Chromium: every plot drawn (decoded, naturalWidth > 0), no console error,
// nothing fetched or linked from another host.
func TestPagesInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	if err := WriteCard(dir, sampleCard()); err != nil {
		t.Fatal(err)
	}
	rdir := t.TempDir()
	hist, v := synthRun(t, rdir, 5000)
	a, err := metrics.Analyze(hist, metrics.AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := sampleResults(v)
	metrics.FillStats(r, a)
	if err := Render(rdir, r, a); err != nil {
		t.Fatal(err)
	}
	for _, pg := range []struct {
		path   string
		images int // the plots the page must show at least
	}{{filepath.Join(dir, "card.html"), 2}, {filepath.Join(rdir, "report.html"), 4}} {
		res := open(t, bin, pg.path)
		if len(res.Images) < pg.images {
			t.Errorf("%s: %d images, want at least %d", filepath.Base(pg.path), len(res.Images), pg.images)
		}
		for _, p := range res.Problems() {
			t.Errorf("%s: %s", filepath.Base(pg.path), p)
		}
	}
}

// TestChromiumCatchesBrokenPage plants in a card.html a plot that cannot
// be decoded, a console error and a remote link: the check must name each.
func TestChromiumCatchesBrokenPage(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	if err := WriteCard(dir, sampleCard()); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "card.html")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, `src="data:image/png;base64,`)
	if i < 0 {
		t.Fatal("card.html embeds no PNG")
	}
	// The first plot's PNG cut to its first bytes: an image the browser
	// cannot decode, as a plot that failed to render.
	j := i + len(`src="data:image/png;base64,`)
	end := j + strings.Index(s[j:], `"`)
	s = s[:j] + s[j:j+40] + s[end:]
	s = strings.Replace(s, "</body>", `<script>console.error("planted error")</script><a href="https://example.com/x.css">x</a></body>`, 1)
	if err := os.WriteFile(page, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	probs := strings.Join(open(t, bin, page).Problems(), "\n")
	for _, want := range []string{"is not drawn", "planted error", "remote resource: a href=https://example.com/x.css"} {
		if !strings.Contains(probs, want) {
			t.Errorf("the check missed %q; it found:\n%s", want, probs)
		}
	}
}

// The card decides (issue 43.3): on a card whose locks are judged against
// their references, a finding's cell (del-no-owner fails a family simple
// holds) is red, a limit of the design the reference shares (both fail
// client-freeze) is grey, and the verdict table says which lock is worse.
func TestCardColoursAgainstTheReference(t *testing.T) {
	bin := chromium(t)
	c := &metrics.Card{Families: []string{"client-freeze", "stall"},
		Scenarios: []metrics.CardScenario{{Name: "gc-pause", Family: "client-freeze"}, {Name: "expire-then-unlock", Family: "stall"}},
		Ran:       metrics.CardRan{Lockchaos: "test", Backend: "process", Seeds: []uint64{1, 2}}}
	for _, l := range []string{"simple", "del-no-owner"} {
		unlock := metrics.FamilyRate{Runs: 2, Valid: 2}
		if l == "del-no-owner" {
			unlock = metrics.FamilyRate{Runs: 2, Invalid: 2}
		}
		c.Locks = append(c.Locks, metrics.CardLock{Name: l, Kind: "correct", Library: "lockchaos built-in",
			Safety: map[string]metrics.FamilyRate{"client-freeze": {Runs: 2, Invalid: 2}, "stall": unlock}})
	}
	c.Findings = []metrics.CardFinding{{Lock: "del-no-owner", Scenario: "expire-then-unlock", Family: "stall", Invalid: 2, Runs: 2,
		Causes: []string{"deleted-by-non-owner"}, Dir: "runs/x", Replay: "lockchaos run expire-then-unlock --lock del-no-owner"}}
	c.JudgeAgainstReferences(func(string) string { return "simple" })
	dir := t.TempDir()
	if err := WriteCard(dir, c); err != nil {
		t.Fatal(err)
	}
	res := open(t, bin, filepath.Join(dir, "card.html"))
	red, grey := "rgb(249, 220, 220)", "rgb(238, 238, 238)"
	for cell, want := range map[string]string{
		"del-no-owner/stall":         red,  // the finding
		"del-no-owner/client-freeze": grey, // a limit simple shares
		"simple/client-freeze":       grey, // its own limit
	} {
		if got := res.Cells[cell]; got != want {
			t.Errorf("cell %s: background %q, want %q (cells: %v)", cell, got, want, res.Cells)
		}
	}
	reds := 0
	for _, bg := range res.Cells {
		if bg == red {
			reds++
		}
	}
	if reds != 1 {
		t.Errorf("%d red safety cells, want 1 (the finding only): %v", reds, res.Cells)
	}
	md, err := os.ReadFile(filepath.Join(dir, "card.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| del-no-owner | worse than its reference simple: fails stall, which simple holds (deleted-by-non-owner) |",
		"| simple | safe within its design (it is the reference of its capabilities); its limits: client-freeze |",
		"a limit of the design: its reference simple fails this family too"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("card.md lacks %q:\n%s", want, md)
		}
	}
}
