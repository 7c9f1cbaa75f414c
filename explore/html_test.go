package explore

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// htmlDoc is a parsed report.html.
type htmlDoc struct{ root *html.Node }

func parseReport(t *testing.T, path string) htmlDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return htmlDoc{root}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	for _, x := range strings.Fields(attr(n, "class")) {
		if x == c {
			return true
		}
	}
	return false
}

// all are the elements under n for which ok holds.
func all(n *html.Node, ok func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && ok(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func byID(n *html.Node, id string) *html.Node {
	if ns := all(n, func(x *html.Node) bool { return attr(x, "id") == id }); len(ns) > 0 {
		return ns[0]
	}
	return nil
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// checkFindingRows checks report.html in out against rep: a block per
// finding with its check, cause, schedule and both rates, the counts, and
// links that point at files that exist. It returns the finding blocks.
func checkFindingRows(t *testing.T, out string, rep *Report) []*html.Node {
	t.Helper()
	doc := parseReport(t, filepath.Join(out, HTMLFile))
	blocks := all(doc.root, func(n *html.Node) bool { return hasClass(n, "finding") })
	if len(blocks) != len(rep.Findings) {
		t.Fatalf("report.html has %d finding blocks, explore found %d", len(blocks), len(rep.Findings))
	}
	for i, f := range rep.Findings {
		b := blocks[i]
		if attr(b, "id") != "finding-"+itoa(f.N) {
			t.Errorf("block %d: id %q, want finding-%d", i, attr(b, "id"), f.N)
		}
		s := text(b)
		for _, want := range []string{f.Check, f.Cause, f.Minimal.Describe(), fraction(f.Lock), fraction(f.Ref), "Wilson"} {
			if !strings.Contains(s, want) {
				t.Errorf("finding %d's block lacks %q:\n%s", f.N, want, s)
			}
		}
		if f.Replay != "" && !strings.Contains(s, f.Replay) {
			t.Errorf("finding %d's block lacks its replay %q", f.N, f.Replay)
		}
		for _, a := range all(b, func(n *html.Node) bool { return n.Data == "a" }) {
			href := attr(a, "href")
			if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(href))); err != nil {
				t.Errorf("finding %d links to %q: %v", f.N, href, err)
			}
		}
	}
	if got := text(byID(doc.root, "count-schedules")); got != itoa(rep.Schedules) {
		t.Errorf("schedules shown %q, want %d", got, rep.Schedules)
	}
	if byID(doc.root, "coverage-kinds") == nil {
		t.Error("no coverage table")
	}
	return blocks
}

func itoa(n int) string { return strconv.Itoa(n) }

func fraction(r Rate) string { return fmt.Sprintf("%d/%d", r.Fails, r.N) }

// The HTML report of an exploration with the fake oracle: the finding's
// block, its scenario link, the counts; no run to link (the fake oracle
// writes no run directory), which the block says.
func TestExploreHTMLWithAFakeOracle(t *testing.T) {
	out := t.TempDir()
	e, err := New(Config{Lock: "del-no-owner", Budget: 2 * time.Second, Seed: 1, Out: out, Oracle: &fakeOracle{},
		Kinds: []string{history.FaultPauseClient, history.FaultClockJump}, MaxFaults: 2, MaxFindings: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("%d findings, want 1", len(rep.Findings))
	}
	blocks := checkFindingRows(t, out, rep)
	if got := all(blocks[0], func(n *html.Node) bool { return hasClass(n, "scenario") }); len(got) != 1 {
		t.Errorf("%d scenario links, want 1", len(got))
	}
	if !strings.Contains(text(blocks[0]), "no confirmation run to show") {
		t.Errorf("no run, but the block does not say so: %s", text(blocks[0]))
	}
}

// decodeDataPNG decodes an <img src="data:image/png;base64,...">.
func decodeDataPNG(t *testing.T, img *html.Node) {
	t.Helper()
	src := attr(img, "src")
	b64, ok := strings.CutPrefix(src, "data:image/png;base64,")
	if !ok {
		t.Fatalf("img src is not an embedded PNG: %.60s", src)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("embedded PNG: %v", err)
	}
}

// A real exploration of a broken control writes report.html whose finding
// links to its confirmation run's report (a run that failed the check)
// and embeds that run's timeline; the picture decodes.
func TestExploreReportOfABrokenControl(t *testing.T) {
	out, rep := exploreBrokenControl(t)
	blocks := checkFindingRows(t, out, rep)
	f := rep.Findings[0]
	if !f.Confirmed {
		t.Skipf("the budget ended before the confirmation: no run to link")
	}
	links := all(blocks[0], func(n *html.Node) bool { return hasClass(n, "run-report") })
	if len(links) != 1 {
		t.Fatalf("%d run report links, want 1", len(links))
	}
	runDir := filepath.Dir(filepath.Join(out, filepath.FromSlash(attr(links[0], "href"))))
	r, err := metrics.ReadResults(filepath.Join(runDir, metrics.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if r.Checks[f.Check].Verdict != checker.Invalid || r.Lock != "del-no-owner" {
		t.Errorf("the linked run (%s) is %s's with %s %s: want the lock's, failing it", runDir, r.Lock, f.Check, r.Checks[f.Check].Verdict)
	}
	imgs := all(blocks[0], func(n *html.Node) bool { return n.Data == "img" && hasClass(n, "timeline") })
	if len(imgs) != 1 {
		t.Fatalf("%d timelines embedded, want 1", len(imgs))
	}
	decodeDataPNG(t, imgs[0])
	if svg := all(blocks[0], func(n *html.Node) bool { return hasClass(n, "timeline-svg") }); len(svg) != 1 {
		t.Errorf("%d timeline SVG links, want 1", len(svg))
	}
}

// A --margin run on a rate template: simple's slow-clock margin is a rate
// below 1/1.2 (a hold of 1.2×TTL outlives the lease when rate×1.2 < 1,
// less when the skew starts mid-hold), margin.png decodes and report.html
// embeds it with the table's row.
func TestMarginOfSimpleSlowClock(t *testing.T) {
	needRedis(t)
	out := t.TempDir()
	e, err := New(Config{Lock: "simple", Budget: 40 * time.Second, Out: out, Oracle: RunnerOracle{Backend: "process"}})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := e.Margins(context.Background(), 2, "clock-skew-rate(slow)", nil)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%v %v", ms, err)
	}
	m := ms[0]
	t.Log(m.Text("simple", "simple"))
	if m.Unit != UnitRate || !m.Falling {
		t.Errorf("unit %q falling %v, want a falling rate", m.Unit, m.Falling)
	}
	if m.Lock == Never || m.Lock > 1/1.2+Precision || m.Lock < 0.3 {
		t.Errorf("simple fails at rate ≤%.2f under a slow clock, want within [0.3, %.2f]", m.Lock, 1/1.2+Precision)
	}
	b, err := os.ReadFile(filepath.Join(out, MarginPlot+".png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("margin.png: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, MarginPlot+".svg")); err != nil {
		t.Error(err)
	}
	doc := parseReport(t, filepath.Join(out, HTMLFile))
	if img := byID(doc.root, "margin-plot"); img == nil {
		t.Error("report.html does not show the margin plot")
	} else {
		decodeDataPNG(t, img)
	}
	table := byID(doc.root, "margin-table")
	if table == nil {
		t.Fatal("report.html has no margin table")
	}
	if s := text(table); !strings.Contains(s, "clock-skew-rate(slow)") || !strings.Contains(s, fmt.Sprintf("%.2f", m.Lock)) || !strings.Contains(s, "rate") {
		t.Errorf("margin table: %s", s)
	}
}

// Ctrl-C (the context ending before the budget) still writes report.html,
// with what was found and the stop said.
func TestExploreHTMLWhenStopped(t *testing.T) {
	out := t.TempDir()
	e, err := New(Config{Lock: "del-no-owner", Budget: time.Minute, Seed: 1, Out: out, Oracle: &fakeOracle{},
		Kinds: []string{history.FaultPauseClient}, MaxFaults: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	rep, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Stopped || len(rep.Findings) == 0 {
		t.Fatalf("stopped %v, %d findings: want stopped with the fake's finding", rep.Stopped, len(rep.Findings))
	}
	checkFindingRows(t, out, rep)
	doc := parseReport(t, filepath.Join(out, HTMLFile))
	if !strings.Contains(text(doc.root), "stopped early") {
		t.Error("report.html does not say the exploration was stopped")
	}
}

// The hold margin (no fault, the hold's length bisected): a lock renewed
// on a timer longer than its TTL is lost from a hold of about one TTL,
// while the watchdog, renewing at a third of it, holds for six TTLs
// (six renewal cycles and more) without a failing check.
func TestHoldMarginSeparatesRenewal(t *testing.T) {
	needRedis(t)
	e, err := New(Config{Lock: "watchdog-fixed-timer", Reference: "watchdog", Budget: 90 * time.Second, Out: t.TempDir(), Oracle: RunnerOracle{Backend: "process"}})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := e.Margins(context.Background(), 1, HoldTemplate, nil)
	if err != nil || len(ms) != 1 {
		t.Fatalf("%v %v", ms, err)
	}
	m := ms[0]
	t.Log(m.Text("watchdog-fixed-timer", "watchdog"))
	if m.Lock == Never || m.Lock > 1.5 {
		t.Errorf("watchdog-fixed-timer lost from a hold of %.2f×TTL, want within [0.5, 1.5]", m.Lock)
	}
	if m.Ref != Never {
		t.Errorf("watchdog lost from a hold of %.2f×TTL (%v), want never up to 6×TTL", m.Ref, m.RefChecks)
	}
}
