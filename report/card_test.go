package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// TestWriteCard checks card.html as a document (x/net/html): both plots
// embedded as PNG data, each after the table it pictures, a column per
// lock, nothing referred to on another host; and card.md's sections.
func TestWriteCard(t *testing.T) {
	dir := t.TempDir()
	c := sampleCard()
	if err := WriteCard(dir, c); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "card.html"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var imgs, headers []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if (a.Key == "src" || a.Key == "href") && (strings.HasPrefix(a.Val, "http:") || strings.HasPrefix(a.Val, "https:") || strings.HasPrefix(a.Val, "//")) {
					t.Errorf("<%s %s=%q>: a remote reference", n.Data, a.Key, a.Val)
				}
				if n.Data == "img" && a.Key == "src" {
					imgs = append(imgs, a.Val)
				}
			}
			if n.Data == "th" && n.FirstChild != nil {
				headers = append(headers, n.FirstChild.Data)
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	if len(imgs) != 2 {
		t.Fatalf("%d images, want the heat map and the margins chart", len(imgs))
	}
	for _, src := range imgs {
		if !strings.HasPrefix(src, "data:image/png;base64,") || len(src) < 1000 {
			t.Errorf("image src %.40q…: want an embedded PNG", src)
		}
	}
	for _, l := range c.Locks {
		if !strings.Contains(strings.Join(headers, "|"), l.Name) {
			t.Errorf("no column for %s", l.Name)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "card.html"))
	page := string(b)
	if s, g, m := strings.Index(page, "Safety by fault family"), strings.Index(page, `alt="Verdicts by fault family"`), strings.Index(page, "Margins (smallest"); !(s < g && g < m) {
		t.Errorf("the heat map is not between the safety and the margins tables (%d, %d, %d)", s, g, m)
	}
	md, err := os.ReadFile(filepath.Join(dir, "card.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(md), "Replay: `lockchaos run gc-pause") {
		t.Errorf("card.md lists a limit of the design as a finding:\n%s", md)
	}
	for _, want := range []string{"|  | simple | watchdog | redsync |", "| client-freeze | invalid 2/2 | invalid 2/2 | invalid 2/2 |",
		"| pause-client@before-write | 1.00×TTL | 1.20×TTL | 1.40×TTL |", "| never learned | 0/3 losses (0%) in 2 runs",
		"| vs bare go-redis | 60% of 15000",
		// News: a run its scenario does not expect, an explored finding.
		"- **redsync** in [smoke](", "invalid on 1/2 seeds; causes: expired-while-held (NOT expected by the scenario). Replay: `lockchaos run smoke --lock redsync --seed 2`",
		"(reference redlock 0/5; inconclusive: the budget ended before its confirmation)",
		// A known finding: expected by the scenario, but not of the reference.
		"- **redsync** in [slow-acquire](", "(known: the scenario asserts it, and expects the built-in of the lock's capabilities to pass). Replay: `lockchaos run slow-acquire --lock redsync --seed 1`",
		// The limits of the design: one row a scenario, every lock in it.
		"## Limits of the design", "| gc-pause | client-freeze | expired-during-pause | [simple 2/2](", "), [watchdog 1/2](",
		// Exploration: against a reference, or not at all.
		"| schedules / findings / limits | its own reference: not explored | not explored | 12 in 1m0s vs redlock / 1 / 2 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("card.md lacks %q:\n%s", want, md)
		}
	}
}

// TestWriteCardWithoutMargins: a card without margins has no margins
// table or chart, and its heat map still.
func TestWriteCardWithoutMargins(t *testing.T) {
	dir := t.TempDir()
	c := sampleCard()
	for i := range c.Locks {
		c.Locks[i].Margins = nil
	}
	if err := WriteCard(dir, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, CardMarginsPlot)); err == nil {
		t.Error("a margins chart without margins")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "card.html"))
	if n := strings.Count(string(b), "<img "); n != 1 {
		t.Errorf("%d images, want the heat map alone", n)
	}
}

// TestWriteCardKeepsFindings: a finding's report and scenario are copied
// beside the card, which links to and replays the copies (its cache of runs
// stays behind); a limit of the design keeps its link to the cache, and the
// card given is not changed.
func TestWriteCardKeepsFindings(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	c := sampleCardWithRuns(t, cache)
	ex := &c.Findings[4] // the explored finding
	ex.ScenarioFile = filepath.Join(ex.Dir, "scenario.yaml")
	ex.Replay = "lockchaos run " + ex.ScenarioFile + " --lock redsync --expect"
	writeFile(t, ex.ScenarioFile, "name: explored\n")
	before := c.Findings[4]
	if err := WriteCard(dir, c); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Findings[4], before) {
		t.Errorf("WriteCard changed the card it was given: %+v", c.Findings[4])
	}
	md, _ := os.ReadFile(filepath.Join(dir, "card.md"))
	// News in order: slow-acquire (known), smoke (unexpected), the explored one.
	for n, want := range []string{"1-redsync", "2-redsync", "3-redsync"} {
		b, err := os.ReadFile(filepath.Join(dir, "findings", want, "report.html"))
		if err != nil {
			t.Fatalf("finding %d: %v", n+1, err)
		}
		if !strings.Contains(string(md), "](findings/"+want+"/report.html)") {
			t.Errorf("card.md does not link finding %d to its copy %s (%s):\n%s", n+1, want, b, md)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "findings", "3-redsync", "scenario.yaml")); err != nil || string(b) != "name: explored\n" {
		t.Errorf("the explored finding's scenario was not copied: %q, %v", b, err)
	}
	if !strings.Contains(string(md), "Replay: `lockchaos run findings/3-redsync/scenario.yaml --lock redsync --expect`") {
		t.Errorf("the replay does not run the copied scenario:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(dir, "findings", "4-simple")); err == nil {
		t.Error("a limit of the design was copied as a finding")
	}
	if rel, _ := filepath.Rel(dir, filepath.Join(cache, "runs/gc-pause-simple/report.html")); !strings.Contains(string(md), "[simple 2/2]("+filepath.ToSlash(rel)+")") {
		t.Errorf("a limit of the design does not link to its run in the cache (%s):\n%s", rel, md)
	}
}

// TestWriteCardAgainFromItsOwnJSON: a card rendered again from the
// card.json it wrote (whose findings point at its findings/) keeps them,
// and a finding fewer leaves no stale copy behind.
func TestWriteCardAgainFromItsOwnJSON(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	c := sampleCardWithRuns(t, cache)
	if err := WriteCard(dir, c); err != nil {
		t.Fatal(err)
	}
	var again metrics.Card
	if b, err := os.ReadFile(filepath.Join(dir, "card.json")); err != nil || json.Unmarshal(b, &again) != nil {
		t.Fatalf("card.json: %v", err)
	}
	again.Findings = slices.DeleteFunc(again.Findings, func(f metrics.CardFinding) bool { return f.Scenario == "smoke" })
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	if err := WriteCard(dir, &again); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"1-redsync": "slow-acquire", "2-redsync": "explore finding 1"} {
		if b, err := os.ReadFile(filepath.Join(dir, "findings", n, "report.html")); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("findings/%s: %q, %v; want the report of %s", n, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "findings", "3-redsync")); err == nil {
		t.Error("a stale copy of a finding the card no longer has")
	}
}

// sampleCardWithRuns is sampleCard with each finding's run directory under
// cache, holding a report.html that names its scenario.
func sampleCardWithRuns(t *testing.T, cache string) *metrics.Card {
	c := sampleCard()
	for i := range c.Findings {
		c.Findings[i].Dir = filepath.Join(cache, c.Findings[i].Dir)
		writeFile(t, filepath.Join(c.Findings[i].Dir, "report.html"), "<p>"+c.Findings[i].Scenario+"</p>")
	}
	return c
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
