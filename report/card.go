package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockchaos/lockchaos/report/metrics"
)

// Card plots' files, beside card.html (which embeds them).
const (
	CardMarginsPlot = "card-margins.png"
	CardGridPlot    = "card-verdicts.png"
)

// WriteCard writes card.json, card.md, card.html and the card's plots into
// dir. card.html embeds the plots and needs nothing but itself; its links
// to run directories are relative to dir. Each finding's evidence (its
// run's report and, for an explored finding, its scenario) is copied under
// dir/findings/, so the card and its findings travel together (into a
// design review, a repository) without the cache of runs they came from.
func WriteCard(dir string, c *metrics.Card) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c, err := keepFindings(dir, c)
	if err != nil {
		return err
	}
	if err := metrics.WriteJSON(filepath.Join(dir, "card.json"), c); err != nil {
		return err
	}
	var plots []htmlPlot
	if err := PlotCardGrid(c, filepath.Join(dir, CardGridPlot)); err == nil {
		plots = append(plots, htmlPlot{Title: "Verdicts by fault family", Caption: "Share of each lock's runs of a family's scenarios found invalid, over every seed (green: none; red: all); the label is invalid/runs.", File: CardGridPlot})
	} else if !isNoData(err) {
		return err
	}
	if err := PlotCardMargins(c, filepath.Join(dir, CardMarginsPlot)); err == nil {
		plots = append(plots, htmlPlot{Title: "Safety margins", Caption: "Per margin template, the smallest fault magnitude (×TTL) at which each lock failed a safety check; a hollow ring past the dashed line: it did not fail in the range searched.", File: CardMarginsPlot})
	} else if !isNoData(err) {
		return err
	}
	// The tables and the findings, made once for card.md and card.html.
	tables := cardTables(c, dir)
	news, limits := splitFindings(cardFindings(c, dir))
	md := cardMarkdown(c, tables, news, limits)
	if err := writeBytes(filepath.Join(dir, "card.md"), []byte(md)); err != nil {
		return err
	}
	for i := range plots {
		u, err := dataURI(filepath.Join(dir, plots[i].File))
		if err != nil {
			return err
		}
		plots[i].Src = u
	}
	// Each plot follows the table it pictures: the heat map the safety
	// table, the margins chart the margins table (the rest at the end).
	var rest []htmlPlot
	for _, p := range plots {
		placed := false
		for i := range tables {
			if tables[i].kind == plotKind[p.File] && tables[i].Plot == nil {
				tables[i].Plot, placed = &p, true
				break
			}
		}
		if !placed {
			rest = append(rest, p)
		}
	}
	var b bytes.Buffer
	if err := cardTemplate.Execute(&b, cardHTML{Card: c, Plots: rest, Tables: tables, News: news, Limits: limits}); err != nil {
		return err
	}
	return writeBytes(filepath.Join(dir, "card.html"), b.Bytes())
}

func isNoData(err error) bool { return err != nil && strings.Contains(err.Error(), errNoData.Error()) }

// cardTable is one section of the card: a header row (the locks) and rows,
// and in the HTML the plot that pictures it.
type cardTable struct {
	Title string
	Head  []string
	Rows  []cardRow
	Plot  *htmlPlot
	kind  string // safety | margins | "" (no plot)
}

// plotKind is the table each plot follows.
var plotKind = map[string]string{CardGridPlot: "safety", CardMarginsPlot: "margins"}

type cardRow struct {
	Name  string
	Cells []cardCell
}

type cardCell struct {
	Text  string
	Href  string
	Class string // good | bad | limit | none
	// Title is the cell's reason, shown on hover (a limit's: which
	// reference fails it too).
	Title string
	// Key names the cell in the page (data-cell: "lock/family" in the
	// safety table), for the browser test.
	Key string
}

// cardTables are the card's sections, shared by the Markdown and the HTML:
// each a function of its own, over the card's locks as columns.
func cardTables(c *metrics.Card, dir string) []cardTable {
	cc := cardCols{c: c, head: []string{""}}
	for _, l := range c.Locks {
		cc.head = append(cc.head, l.Name)
	}
	tables := []cardTable{}
	if v, ok := cc.verdicts(); ok {
		tables = append(tables, v)
	}
	tables = append(tables, cc.locks(), cc.safety())
	if m := marginTable(c, cc.head); len(m.Rows) > 0 {
		tables = append(tables, m)
	}
	tables = append(tables, cc.loss(), cc.cost())
	if e, ok := cc.explored(); ok {
		tables = append(tables, e)
	}
	return append(tables, ranTable(c))
}

// cardCols builds the card's tables: one column per lock.
type cardCols struct {
	c    *metrics.Card
	head []string
}

// col is one row's cells, f of each lock.
func (cc cardCols) col(f func(l metrics.CardLock) cardCell) []cardCell {
	var out []cardCell
	for _, l := range cc.c.Locks {
		out = append(out, f(l))
	}
	return out
}

func (cc cardCols) locks() cardTable {
	return cardTable{Title: "Locks", Head: cc.head, Rows: []cardRow{
		{"kind", cc.col(func(l metrics.CardLock) cardCell { return cardCell{Text: l.Kind} })},
		{"library", cc.col(func(l metrics.CardLock) cardCell {
			return cardCell{Text: strings.TrimSpace(l.Library + " " + l.Version)}
		})},
	}}
}

// verdicts is the card's first table: one line per lock saying what to
// conclude (metrics.Card.JudgeAgainstReferences), when the card has them.
func (cc cardCols) verdicts() (cardTable, bool) {
	t := cardTable{Title: "Verdicts (each lock against the built-in correct lock of its capabilities, on the same runs)", Head: []string{"", "verdict"}}
	for _, l := range cc.c.Locks {
		if l.Verdict == "" {
			return t, false
		}
		class := map[string]string{metrics.VerdictWorse: "bad", metrics.VerdictSafe: "good", metrics.VerdictBetter: "good", metrics.VerdictAlone: "none"}[l.VerdictClass]
		t.Rows = append(t.Rows, cardRow{l.Name, []cardCell{{Text: l.Verdict, Class: class}}})
	}
	return t, len(t.Rows) > 0
}

func (cc cardCols) safety() cardTable {
	t := cardTable{Title: "Safety by fault family (invalid runs / runs, over every seed; red: worse than the lock's reference, grey: a limit its reference shares)", Head: cc.head, kind: "safety"}
	for _, f := range cc.c.Families {
		t.Rows = append(t.Rows, cardRow{f, cc.col(func(l metrics.CardLock) cardCell {
			cell := safetyCell(l.Safety[f], l.Versus[f], l.Reference)
			cell.Key = l.Name + "/" + f
			return cell
		})})
	}
	return t
}

// safetyCell is one lock's runs of one fault family, coloured by how they
// compare with its reference's (vs; "" when the reference is not on the
// card: red when invalid, as before).
func safetyCell(r metrics.FamilyRate, vs, ref string) cardCell {
	if r.Runs == 0 {
		return cardCell{Text: "n/a", Class: "none"}
	}
	cell := cardCell{Text: fmt.Sprintf("valid %d/%d", r.Valid, r.Runs), Class: "good"}
	if r.Invalid > 0 {
		cell = cardCell{Text: fmt.Sprintf("invalid %d/%d", r.Invalid, r.Runs), Class: "bad"}
	}
	switch vs {
	case metrics.VersusWorse:
		cell.Title = "a finding: its reference " + ref + " holds this family"
	case metrics.VersusLimit:
		cell.Class, cell.Title = "limit", "a limit of the design: its reference "+ref+" fails this family too"
		cell.Text += " (limit)"
	case metrics.VersusBetter:
		cell.Title = "better than its reference " + ref + ", which fails this family's scenarios that both ran"
		cell.Text += " (better)"
	}
	if r.Invalid > 0 && (vs == metrics.VersusSame || vs == metrics.VersusBetter) {
		cell.Title = "invalid only in scenarios its reference " + ref + " did not run: judged alone"
	}
	if r.Unknown > 0 {
		cell.Text += fmt.Sprintf(", unknown %d", r.Unknown)
	}
	if r.Unexpected > 0 {
		cell.Text += fmt.Sprintf(" (%d not as expected)", r.Unexpected)
	}
	return cell
}

func (cc cardCols) loss() cardTable {
	lossCell := func(f func(*metrics.CardLoss) string) func(l metrics.CardLock) cardCell {
		return func(l metrics.CardLock) cardCell {
			if l.Loss == nil {
				return cardCell{Text: "no loss", Class: "none"}
			}
			return cardCell{Text: f(l.Loss)}
		}
	}
	return cardTable{Title: "Loss detection (how late the holder learned its key was lost)", Head: cc.head, Rows: []cardRow{
		{"p50 / p99 / max", cc.col(lossCell(func(d *metrics.CardLoss) string {
			return fmt.Sprintf("%.0f / %.0f / %.0f ms", d.P50MS, d.P99MS, d.MaxMS)
		}))},
		{"never learned", cc.col(lossCell(func(d *metrics.CardLoss) string {
			return fmt.Sprintf("%d/%d losses (%.0f%%) in %d runs", d.Never, d.Losses, 100*float64(d.Never)/float64(max(d.Losses, 1)), d.Runs)
		}))},
	}}
}

func (cc cardCols) cost() cardTable {
	benchCell := func(f func(*metrics.CardBench) string) func(l metrics.CardLock) cardCell {
		return func(l metrics.CardLock) cardCell {
			if l.Bench == nil && l.NotBenched != "" {
				return cardCell{Text: "n/a: " + l.NotBenched, Class: "none"}
			}
			if l.Bench == nil {
				return cardCell{Text: "not benched", Class: "none"}
			}
			return cardCell{Text: f(l.Bench)}
		}
	}
	pct := func(a, b float64) string {
		if b <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f%%", 100*a/b)
	}
	return cardTable{Title: "Liveness and cost (bench, no faults)", Head: cc.head, Rows: []cardRow{
		{"throughput (cycles/s)", cc.col(benchCell(func(b *metrics.CardBench) string { return fmt.Sprintf("%.0f", b.Lock.Throughput) }))},
		{"vs redis-benchmark ceiling", cc.col(benchCell(func(b *metrics.CardBench) string {
			return pct(b.Lock.Throughput, b.CeilingCS) + fmt.Sprintf(" of %.0f", b.CeilingCS)
		}))},
		{"vs bare go-redis", cc.col(benchCell(func(b *metrics.CardBench) string {
			return pct(b.Lock.Throughput, b.GoRedisCS) + fmt.Sprintf(" of %.0f", b.GoRedisCS)
		}))},
		{"hand-off p50 / p99", cc.col(benchCell(func(b *metrics.CardBench) string {
			h := b.Lock.LatencyUS["handoff"]
			return metrics.FormatUS(h.P50) + " / " + metrics.FormatUS(h.P99)
		}))},
		{"fairness (Jain)", cc.col(benchCell(func(b *metrics.CardBench) string { return fmt.Sprintf("%.3f", b.Lock.Fairness) }))},
		{"server CPU per cycle", cc.col(benchCell(func(b *metrics.CardBench) string {
			if b.Lock.Server == nil {
				return "–"
			}
			return fmt.Sprintf("%.1f µs, %.1f commands", b.Lock.Server.UsecPerCycle, b.Lock.Server.CommandsPerCycle)
		}))},
	}}
}

// explored is the exploration table, when a lock was explored.
func (cc cardCols) explored() (cardTable, bool) {
	explored := false
	for _, l := range cc.c.Locks {
		explored = explored || l.Explored != nil
	}
	return cardTable{Title: "Exploration (random fault schedules against the lock's reference)", Head: cc.head, Rows: []cardRow{
		{"schedules / findings / limits", cc.col(func(l metrics.CardLock) cardCell {
			if l.Explored == nil {
				return cardCell{Text: "not explored", Class: "none"}
			}
			e := l.Explored
			if e.Self {
				return cardCell{Text: "its own reference: not explored", Class: "none"}
			}
			cl := "good"
			if e.Findings > 0 {
				cl = "bad"
			}
			vs := ""
			if e.Reference != "" {
				vs = " vs " + e.Reference
			}
			return cardCell{Text: fmt.Sprintf("%d in %s%s / %d / %d", e.Schedules, e.Budget, vs, e.Findings, e.Limits), Class: cl}
		})}}}, explored
}

// ranTable says what ran: versions, machine, seeds, budget.
func ranTable(c *metrics.Card) cardTable {
	ran := cardTable{Title: "What ran", Head: []string{"", ""}}
	add := func(k, v string) { ran.Rows = append(ran.Rows, cardRow{k, []cardCell{{Text: v}}}) }
	add("lockchaos", c.Ran.Lockchaos)
	add("backend", c.Ran.Backend)
	add("redis", c.Ran.Redis)
	add("machine", c.Ran.Machine)
	add("date", c.Ran.Date)
	add("seeds", fmt.Sprint(c.Ran.Seeds))
	add("scenarios", fmt.Sprint(len(c.Scenarios)))
	budget := c.Ran.Budget
	if budget == "" {
		budget = "none"
	}
	add("budget / wall time", fmt.Sprintf("%s / %.0f s", budget, c.Ran.WallS))
	add("steps (reused)", fmt.Sprintf("%d (%d reused from %s)", c.Ran.Runs, c.Ran.Reused, c.Ran.Cache))
	if len(c.Ran.NotRun) > 0 {
		add("not run (budget)", strings.Join(c.Ran.NotRun, "; "))
	}
	return ran
}

// marginTable: per template a row, each lock's smallest failing magnitude.
func marginTable(c *metrics.Card, head []string) cardTable {
	t := cardTable{Title: "Margins (smallest failing magnitude)", Head: head, kind: "margins"}
	var names []string
	seen := map[string]bool{}
	for _, l := range c.Locks {
		for _, m := range l.Margins {
			if !seen[m.Template] {
				seen[m.Template] = true
				names = append(names, m.Template)
			}
		}
	}
	for _, n := range names {
		var cells []cardCell
		for _, l := range c.Locks {
			cell := cardCell{Text: "–", Class: "none"}
			for _, m := range l.Margins {
				if m.Template == n {
					cell = marginCell(m)
				}
			}
			cells = append(cells, cell)
		}
		t.Rows = append(t.Rows, cardRow{n, cells})
	}
	return t
}

func marginCell(m metrics.CardMargin) cardCell {
	switch {
	case m.At < 0 && m.Unit == "rate":
		return cardCell{Text: "never", Class: "good"}
	case m.At < 0:
		return cardCell{Text: fmt.Sprintf("never (≤%g×TTL)", m.Hi), Class: "good"}
	case m.Unit == "rate" && m.Falling:
		return cardCell{Text: fmt.Sprintf("rate ≤%.2f", m.At), Class: "bad"}
	case m.Unit == "rate":
		return cardCell{Text: fmt.Sprintf("rate ≥%.2f", m.At), Class: "bad"}
	}
	return cardCell{Text: fmt.Sprintf("%.2f×TTL", m.At), Class: "bad"}
}

// cardMarkdown is card.md: the card's tables and its findings (their run
// links relative to the card's directory).
func cardMarkdown(c *metrics.Card, tables []cardTable, news []cardFinding, limits []cardLimit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Lock report card\n\n")
	for _, t := range tables {
		fmt.Fprintf(&b, "## %s\n\n| %s |\n|%s\n", t.Title, strings.Join(t.Head, " | "), strings.Repeat(" --- |", len(t.Head)))
		var why []string
		for _, r := range t.Rows {
			var cs []string
			for i, cell := range r.Cells {
				cs = append(cs, strings.ReplaceAll(cell.Text, "|", "\\|"))
				if cell.Title != "" && i+1 < len(t.Head) {
					why = append(why, fmt.Sprintf("- %s, %s: %s", t.Head[i+1], r.Name, cell.Title))
				}
			}
			fmt.Fprintf(&b, "| %s | %s |\n", r.Name, strings.Join(cs, " | "))
		}
		b.WriteString("\n")
		if len(why) > 0 {
			b.WriteString(strings.Join(why, "\n") + "\n\n")
		}
	}
	b.WriteString("## Findings\n\n")
	if len(news) == 0 {
		b.WriteString(noNews(c) + "\n")
	} else {
		b.WriteString(newsIntro + "\n\n")
	}
	for _, f := range news {
		fmt.Fprintf(&b, "- **%s** in [%s](%s) (%s): %s. Replay: `%s`\n", f.Lock, f.Scenario, f.Link, f.Family, f.Text(), f.Replay)
	}
	if len(limits) > 0 {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| scenario | family | causes | locks: invalid seeds / seeds |\n| --- | --- | --- | --- |\n", limitsTitle, limitsIntro)
		for _, l := range limits {
			var ls []string
			for _, f := range l.Locks {
				ls = append(ls, fmt.Sprintf("[%s %d/%d](%s)", f.Lock, f.Invalid, f.Runs, f.Link))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", l.Scenario, l.Family, l.Causes, strings.Join(ls, ", "))
		}
	}
	return b.String()
}

const (
	newsIntro = "Each finding's link opens its first failing run's report, kept with its scenario under " +
		FindingsDir + "/ beside this card; a replay that names a file runs from this card's directory."
	limitsTitle = "Limits of the design (invalid where the scenario expects it)"
	limitsIntro = "Runs invalid where the scenario expects every lock of that design to fail " +
		"(a failover that loses the key, a pause past the TTL without fencing): not news about " +
		"one lock, but what the design cannot promise. One row per scenario; each link opens the " +
		"first invalid seed's report."
)

// noNews is the Findings section's sentence when every invalid run was a
// limit of the design.
func noNews(c *metrics.Card) string {
	if len(c.Findings) == 0 {
		return "No run was invalid."
	}
	return "No finding: every invalid run is one its scenario expects (below)."
}

// cardLimit groups the expected failures of one scenario: every lock the
// scenario expects to fail there and did.
type cardLimit struct {
	Scenario, Family, Causes string
	Locks                    []cardFinding
}

// splitFindings separates the news (explored findings and runs no
// scenario expects) from the limits of the design, grouped by scenario in
// the order the findings came.
func splitFindings(fs []cardFinding) (news []cardFinding, limits []cardLimit) {
	at := map[string]int{}
	var causes [][]string // per limit, in the order first seen
	for _, f := range fs {
		if isNews(f.CardFinding) {
			news = append(news, f)
			continue
		}
		i, ok := at[f.Scenario]
		if !ok {
			i = len(limits)
			at[f.Scenario] = i
			limits = append(limits, cardLimit{Scenario: f.Scenario, Family: f.Family})
			causes = append(causes, nil)
		}
		limits[i].Locks = append(limits[i].Locks, f)
		for _, c := range f.Causes {
			if !slices.Contains(causes[i], c) {
				causes[i] = append(causes[i], c)
			}
		}
	}
	for i := range limits {
		limits[i].Causes = strings.Join(causes[i], ", ")
	}
	return news, limits
}

// isNews: an explored finding, or a run no scenario expects, or the lock's
// own failure that a scenario asserts; the rest are limits of the design.
func isNews(f metrics.CardFinding) bool { return f.Reference != "" || !f.Expected || f.Known }

// FindingsDir is the card's directory of its findings' evidence.
const FindingsDir = "findings"

// keepFindings copies each news finding's evidence into
// dir/findings/<n>-<lock>/: the first failing run's report.html and, where
// the replay runs a file, that scenario as scenario.yaml. The card it
// returns links to the copies and replays the copied scenario, by a path
// relative to dir; c is not changed. dir/findings is the card's own: it is
// replaced, after every source was read (a card rendered again from its
// card.json has its sources there). Evidence already gone (a cache cleaned
// since) leaves that finding's links as they were.
func keepFindings(dir string, c *metrics.Card) (*metrics.Card, error) {
	out := *c
	out.Findings = slices.Clone(c.Findings)
	type kept struct {
		i                int
		rel              string
		report, scenario []byte
	}
	var keep []kept
	for i, f := range out.Findings {
		if !isNews(f) {
			continue
		}
		k := kept{i: i, rel: filepath.Join(FindingsDir, fmt.Sprintf("%d-%s", len(keep)+1, f.Lock))}
		if f.Dir != "" {
			k.report, _ = os.ReadFile(filepath.Join(f.Dir, "report.html"))
		}
		if f.ScenarioFile != "" {
			k.scenario, _ = os.ReadFile(f.ScenarioFile)
		}
		keep = append(keep, k)
	}
	if err := os.RemoveAll(filepath.Join(dir, FindingsDir)); err != nil {
		return nil, err
	}
	for _, k := range keep {
		f, to := &out.Findings[k.i], filepath.Join(dir, k.rel)
		if k.report != nil {
			if err := writeIn(to, "report.html", k.report); err != nil {
				return nil, err
			}
			f.Dir = to
		}
		if k.scenario != nil {
			if err := writeIn(to, "scenario.yaml", k.scenario); err != nil {
				return nil, err
			}
			// Replayed from dir: the copy's path relative to it.
			f.Replay = strings.Replace(f.Replay, f.ScenarioFile, filepath.ToSlash(filepath.Join(k.rel, "scenario.yaml")), 1)
			f.ScenarioFile = filepath.Join(to, "scenario.yaml")
		}
	}
	return &out, nil
}

func writeIn(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), b, 0o644)
}

type cardFinding struct {
	metrics.CardFinding
	Link string
}

func (f cardFinding) causes() string {
	if len(f.Causes) == 0 {
		return ""
	}
	return "; causes: " + strings.Join(f.Causes, ", ")
}

func (f cardFinding) expected() string {
	if f.Reference != "" && f.Unconfirmed {
		return " (reference " + f.Reference + "; inconclusive: the budget ended before its confirmation)"
	}
	if f.Reference != "" {
		return " (reference " + f.Reference + ")"
	}
	if f.Known {
		return " (known: the scenario asserts it, and expects the built-in of the lock's capabilities to pass)"
	}
	if f.Expected {
		return " (the scenario expects it: a limit of the design)"
	}
	return " (NOT expected by the scenario)"
}

// Text is the finding's sentence for the HTML.
func (f cardFinding) Text() string {
	return fmt.Sprintf("invalid on %d/%d seeds%s%s", f.Invalid, f.Runs, f.causes(), f.expected())
}

func cardFindings(c *metrics.Card, dir string) []cardFinding {
	var out []cardFinding
	for _, f := range c.Findings {
		target := f.Dir
		if _, err := os.Stat(filepath.Join(f.Dir, "report.html")); err == nil {
			target = filepath.Join(f.Dir, "report.html")
		}
		link := target
		if abs, err := filepath.Abs(target); err == nil {
			if d, err := filepath.Abs(dir); err == nil {
				if rel, err := filepath.Rel(d, abs); err == nil {
					link = rel
				}
			}
		}
		out = append(out, cardFinding{f, filepath.ToSlash(link)})
	}
	return out
}

// PlotCardGrid writes the verdict heat map: locks (columns) × fault
// families (rows), each cell coloured by the share of its runs found
// invalid, labelled invalid/runs.
func PlotCardGrid(c *metrics.Card, path string) error {
	var cells []heatCell
	for fi, f := range c.Families {
		for li, l := range c.Locks {
			r, ok := l.Safety[f]
			if !ok || r.Runs == 0 {
				cells = append(cells, heatCell{x: li, y: fi, label: "n/a", rate: -1})
				continue
			}
			cells = append(cells, heatCell{x: li, y: fi, label: fmt.Sprintf("%d/%d", r.Invalid, r.Runs), rate: float64(r.Invalid) / float64(r.Runs)})
		}
	}
	if len(cells) == 0 {
		return fmt.Errorf("plot card grid: %w", errNoData)
	}
	p := newPlot("invalid runs by fault family", "", "")
	p.Add(heatCells(cells))
	var xt, yt plot.ConstantTicks
	for i, l := range c.Locks {
		xt = append(xt, plot.Tick{Value: float64(i), Label: l.Name})
	}
	for i, f := range c.Families {
		yt = append(yt, plot.Tick{Value: -float64(i), Label: f})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = xt, yt
	p.X.Min, p.X.Max = -0.5, float64(len(c.Locks))-0.5
	p.Y.Min, p.Y.Max = -float64(len(c.Families))+0.5, 0.5
	p.X.Tick.Length, p.Y.Tick.Length = 0, 0
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.LineStyle.Width, p.Y.LineStyle.Width = 0, 0
	l := &legend{}
	for _, v := range []float64{0, 0.5, 1} {
		l.add(fmt.Sprintf("%.0f%% invalid", 100*v), bandThumb2{heatColor(v)})
	}
	l.add("n/a", bandThumb2{verdictColors["n/a"]})
	w := vg.Length(2.6+1.15*float64(len(c.Locks)))*vg.Inch + l.width()
	h := vg.Length(1.3+0.4*float64(len(c.Families))) * vg.Inch
	return savePlot(p, l, w, h, trimExt(path))
}

type heatCell struct {
	x, y  int
	label string
	rate  float64 // -1: n/a
}

type heatCells []heatCell

// heatColor runs from the valid green (0) to the invalid red (1).
func heatColor(rate float64) color.RGBA {
	g, r := verdictColors["valid"], verdictColors["invalid"]
	mix := func(a, b uint8) uint8 { return uint8(math.Round(float64(a)*(1-rate) + float64(b)*rate)) }
	return color.RGBA{mix(g.R, r.R), mix(g.G, r.G), mix(g.B, r.B), 0xff}
}

func (hc heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := p.X.Tick.Label
	sty.Rotation = 0
	sty.Font.Size = 9
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	for _, cell := range hc {
		x, y := float64(cell.x), -float64(cell.y)
		x0, x1 := trX(x-0.5)+1.5, trX(x+0.5)-1.5
		y0, y1 := trY(y-0.5)+1.5, trY(y+0.5)-1.5
		col := verdictColors["n/a"]
		tsty := sty
		tsty.Color = colBlack
		if cell.rate >= 0 {
			col = heatColor(cell.rate)
			tsty.Color = color.White
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		c.FillText(tsty, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, cell.label)
	}
}

// PlotCardMargins writes one chart of every lock's margins (×TTL
// templates): per template a row, per lock a marker of its own colour and
// shape at its smallest failing magnitude, or a hollow one past the
// searched range where it never failed.
func PlotCardMargins(c *metrics.Card, path string) error {
	var names []string
	idx := map[string]int{}
	hi := 0.0
	for _, l := range c.Locks {
		for _, m := range l.Margins {
			if m.Unit != "×TTL" {
				continue
			}
			if _, ok := idx[m.Template]; !ok {
				idx[m.Template] = len(names)
				names = append(names, m.Template)
			}
			hi = max(hi, m.Hi)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("plot card margins: %w", errNoData)
	}
	p := newPlot("safety margins of every lock", "smallest failing magnitude (×TTL)", "")
	p.X.Min, p.X.Max = 0, hi*1.3
	p.Y.Min, p.Y.Max = -float64(len(names))+0.4, 0.6
	var yt plot.ConstantTicks
	for i, n := range names {
		yt = append(yt, plot.Tick{Value: -float64(i), Label: n})
	}
	p.Y.Tick.Marker, p.Y.Tick.Length = yt, 0
	p.Add(vlines{{x: hi, label: "searched to " + fmt.Sprint(hi), col: colGrey}})
	glyphs := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	l := &legend{}
	n := len(c.Locks)
	for li, lk := range c.Locks {
		col := palette[li%len(palette)]
		g := glyphs[li%len(glyphs)]
		dy := 0.0
		if n > 1 {
			dy = 0.6 * (float64(li)/float64(n-1) - 0.5)
		}
		var fail, never plotter.XYs
		for _, m := range lk.Margins {
			if m.Unit != "×TTL" {
				continue
			}
			y := -float64(idx[m.Template]) + dy
			if m.At < 0 {
				never = append(never, plotter.XY{X: hi * (1.06 + 0.04*float64(li)), Y: y})
			} else {
				fail = append(fail, plotter.XY{X: m.At, Y: y})
			}
		}
		for _, s := range []struct {
			xy    plotter.XYs
			shape draw.GlyphDrawer
		}{{fail, g}, {never, draw.RingGlyph{}}} {
			if len(s.xy) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(s.xy)
			if err != nil {
				return fmt.Errorf("plot card margins: %w", err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: 4.5, Shape: s.shape}
			p.Add(sc)
		}
		l.add(lk.Name, marginThumb{col, g})
	}
	l.add("never (ring, past the line)", marginThumb{colGrey, draw.RingGlyph{}})
	h := vg.Length(1.2+0.42*float64(len(names))) * vg.Inch
	return savePlot(p, l, 10*vg.Inch+l.width(), h, trimExt(path))
}

type cardHTML struct {
	Card   *metrics.Card
	Plots  []htmlPlot
	Tables []cardTable
	// News are the findings (explored, not expected by their scenario, or
	// known); Limits the expected failures, by scenario (splitFindings).
	News   []cardFinding
	Limits []cardLimit
}

// NoNews is the sentence when there is no finding.
func (d cardHTML) NoNews() string { return noNews(d.Card) }

// LimitsTitle and LimitsIntro head the limits table.
func (d cardHTML) LimitsTitle() string { return limitsTitle }
func (d cardHTML) LimitsIntro() string { return limitsIntro }

// NewsIntro says where the findings' evidence is.
func (d cardHTML) NewsIntro() string { return newsIntro }

var cardTemplate = template.Must(template.New("card").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>lockchaos report card</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:4px 10px;text-align:left;font-size:14px}
th{background:#f0f0f0}
td.good{background:#e3f1e0}td.bad{background:#f9dcdc}td.limit{background:#eeeeee}td.none{color:#888}
img{max-width:100%;border:1px solid #ddd}
figure{margin:1em 0}
code{background:#f4f4f4;padding:1px 4px}
</style></head><body>
<h1>Lock report card</h1>
<p>{{len .Card.Locks}} locks, {{len .Card.Scenarios}} scenarios, seeds {{.Card.Ran.Seeds}}, backend {{.Card.Ran.Backend}}, {{.Card.Ran.Date}}.</p>
{{range .Tables}}<h2>{{.Title}}</h2>
<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Name}}</th>{{range .Cells}}<td class="{{.Class}}"{{with .Title}} title="{{.}}"{{end}}{{with .Key}} data-cell="{{.}}"{{end}}>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</table>
{{with .Plot}}<figure class="plot"><img alt="{{.Title}}" src="{{.Src}}"><figcaption>{{.Caption}}</figcaption></figure>{{end}}
{{end}}
{{range .Plots}}<figure class="plot"><h2>{{.Title}}</h2><img alt="{{.Title}}" src="{{.Src}}"><figcaption>{{.Caption}}</figcaption></figure>
{{end}}
<h2>Findings</h2>
{{with .News}}<p>{{$.NewsIntro}}</p><ul>{{range .}}<li><b>{{.Lock}}</b> in <a href="{{.Link}}">{{.Scenario}}</a> ({{.Family}}): {{.Text}}. Replay: <code>{{.Replay}}</code></li>
{{end}}</ul>{{else}}<p>{{.NoNews}}</p>{{end}}
{{with .Limits}}<h2>{{$.LimitsTitle}}</h2>
<p>{{$.LimitsIntro}}</p>
<table><tr><th>scenario</th><th>family</th><th>causes</th><th>locks: invalid seeds / seeds</th></tr>
{{range .}}<tr><td>{{.Scenario}}</td><td>{{.Family}}</td><td>{{.Causes}}</td><td>{{range $i, $f := .Locks}}{{if $i}}, {{end}}<a href="{{$f.Link}}">{{$f.Lock}} {{$f.Invalid}}/{{$f.Runs}}</a>{{end}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))
