package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
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
