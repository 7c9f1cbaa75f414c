package report

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// MaxTimelines caps the holder timelines Render draws (one per violation).
const MaxTimelines = 5

// MaxIncidentTimelines caps the holder timelines Render draws for
// incidents (one per incident, in order).
const MaxIncidentTimelines = 10

// Timeline limits: how much history around a violation is read and shown.
const (
	timelineMaxLanes  = 12
	timelineMaxItems  = 20000 // holds, pauses, server events kept per violation
	timelineMinPadNS  = 20_000_000
	timelineMaxReachN = 10_000_000_000 // how far back a hold overlapping the window may start
)

type tlHold struct {
	client         int
	from, to       int64 // ack → release invoke (or lost, or end of view)
	deadline       int64
	lost, released bool
}

type tlSpan struct {
	client   int
	from, to int64
	detail   string
}

type tlMark struct {
	lane   string // node name
	t      int64
	detail string
}

// timelineData is what one pass collects around one violation.
type timelineData struct {
	v            checker.Violation
	winLo, winHi int64 // the checker's window
	lo, hi       int64 // collection range
	open         map[int]tlHold
	holds        []tlHold
	pauses       []tlSpan
	server       []tlMark
	dropped      bool
	// title and band name the plot and the shaded window ("" = a
	// violation's).
	title, band string
}

func newTimelineData(v checker.Violation, ttlNS int64) *timelineData {
	lo, hi := v.Window[0], v.Window[1]
	if lo == 0 && hi == 0 {
		at := int64(v.AtMS * 1e6)
		lo, hi = at, at
	}
	if hi < lo {
		lo, hi = hi, lo
	}
	pad := max((hi-lo)/2, timelineMinPadNS)
	reach := min(max(2*(hi-lo), ttlNS, timelineMinPadNS), timelineMaxReachN)
	return &timelineData{v: v, winLo: lo, winHi: hi, lo: lo - reach - pad, hi: hi + pad, open: map[int]tlHold{}}
}

func (d *timelineData) overlaps(from, to int64) bool { return to >= d.lo && from <= d.hi }

func (d *timelineData) full() bool {
	if len(d.holds)+len(d.pauses)+len(d.server) >= timelineMaxItems {
		d.dropped = true
		return true
	}
	return false
}

func (d *timelineData) closeHold(c int, at int64, lost bool) {
	h, ok := d.open[c]
	if !ok {
		return
	}
	delete(d.open, c)
	h.to, h.lost, h.released = at, lost, !lost
	if d.overlaps(h.from, h.to) && !d.full() {
		d.holds = append(d.holds, h)
	}
}

func (d *timelineData) event(e *history.Event) {
	if e.Op == history.OpPause {
		end := e.End
		if end < e.T {
			end = e.T
		}
		if d.overlaps(e.T, end) && !d.full() {
			d.pauses = append(d.pauses, tlSpan{client: e.Client, from: e.T, to: end, detail: e.Detail})
		}
		return
	}
	if e.Key != d.v.Key {
		return
	}
	switch e.Op {
	case history.OpAcquire:
		if e.Result == history.OK && e.Depth <= 1 && e.Client >= 0 {
			if e.End > d.hi {
				return
			}
			d.closeHold(e.Client, e.End, false)
			d.open[e.Client] = tlHold{client: e.Client, from: e.End, deadline: e.Deadline}
		}
	case history.OpLost:
		d.closeHold(e.Client, e.T, true)
	case history.OpRelease:
		if e.Depth == 0 {
			d.closeHold(e.Client, e.T, false)
		}
	case history.OpServer:
		if e.T >= d.lo && e.T <= d.hi && !d.full() {
			d.server = append(d.server, tlMark{lane: e.Node, t: e.T, detail: e.Detail})
		}
	}
}

func (d *timelineData) finish(endNS int64) {
	for c, h := range d.open {
		h.to = max(endNS, h.from)
		if d.overlaps(h.from, h.to) {
			d.holds = append(d.holds, h)
		}
		delete(d.open, c)
	}
}

// collectTimelines reads the history once for every violation given. Lines
// far before every window are skipped without decoding them (the writer puts
// "t" and "end" first), and reading stops well after the last window: on a
// long history this pass costs a fraction of Analyze.
func collectTimelines(historyPath string, vs []checker.Violation, ttlNS int64) ([]*timelineData, error) {
	ds := make([]*timelineData, len(vs))
	skipBefore, stopAfter := int64(math.MaxInt64), int64(math.MinInt64)
	for i, v := range vs {
		ds[i] = newTimelineData(v, ttlNS)
		skipBefore = min(skipBefore, ds[i].lo-timelineMaxReachN)
		stopAfter = max(stopAfter, ds[i].hi+timelineMaxReachN)
	}
	var end int64
	_, err := history.ScanWindow(historyPath, skipBefore, stopAfter, func(e *history.Event) error {
		end = max(end, e.T, e.End)
		for _, d := range ds {
			d.event(e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read timelines: %w", err)
	}
	for _, d := range ds {
		d.finish(end)
	}
	return ds, nil
}

// PlotTimelines draws timeline-<n>.png/.svg into dir for the first
// MaxTimelines violations that have a window, reading the history once.
// It returns, per violation index, the base name written ("" = none) and
// the errors of the plots that failed.
func PlotTimelines(dir string, a *metrics.Analysis, vs []checker.Violation) (map[int]string, []error) {
	names, _, errs := plotAllTimelines(dir, a, vs, nil)
	return names, errs
}

// tlSpec is one timeline to draw: the view, its file's base name, and
// which violation (index) or incident (id) it belongs to.
type tlSpec struct {
	v           checker.Violation
	base        string
	n           int
	incident    bool
	title, band string
}

// plotAllTimelines draws, reading the history once, timeline-<n> for the
// first MaxTimelines violations that have a window and incident-<id> for
// the first MaxIncidentTimelines incidents. It returns the base names
// written per violation index and per incident id, and the errors of the
// plots that failed.
func plotAllTimelines(dir string, a *metrics.Analysis, vs []checker.Violation, incs []checker.Incident) (map[int]string, map[int]string, []error) {
	names, incNames := map[int]string{}, map[int]string{}
	var specs []tlSpec
	drawable := func(v checker.Violation) bool { return v.Key != "" && (v.Window != [2]int64{} || v.AtMS != 0) }
	for i, v := range vs {
		if len(specs) == MaxTimelines {
			break
		}
		if drawable(v) {
			specs = append(specs, tlSpec{v: v, base: fmt.Sprintf("timeline-%d", len(specs)+1), n: i})
		}
	}
	for i, in := range incs {
		if i == MaxIncidentTimelines {
			break
		}
		v := incidentTimelineView(in)
		if !drawable(v) {
			continue
		}
		title := fmt.Sprintf("incident %d on %s", in.ID, v.Key)
		if len(in.Keys) > 1 {
			title += fmt.Sprintf(" (1 of %d keys)", len(in.Keys))
		}
		if in.Cause != "" {
			title += " — " + in.Cause
		}
		specs = append(specs, tlSpec{v: v, base: fmt.Sprintf("incident-%d", in.ID), n: in.ID, incident: true, title: title, band: "incident span"})
	}
	if len(specs) == 0 || a == nil || a.HistoryPath == "" {
		return names, incNames, nil
	}
	ttl := int64(0)
	if ms, ok := metrics.MetaInt(a.Meta, history.MetaTTLms); ok {
		ttl = int64(ms) * 1_000_000
	}
	sel := make([]checker.Violation, len(specs))
	for i, s := range specs {
		sel[i] = s.v
	}
	ds, err := collectTimelines(a.HistoryPath, sel, ttl)
	if err != nil {
		return names, incNames, []error{err}
	}
	var errs []error
	for j, d := range ds {
		s := specs[j]
		d.title, d.band = s.title, s.band
		if err := plotTimeline(d, a, s.n+1, filepath.Join(dir, s.base)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.base, err))
			continue
		}
		if s.incident {
			incNames[s.n] = s.base
		} else {
			names[s.n] = s.base
		}
	}
	return names, incNames, errs
}

// tlBars draws holds (filled bars), pauses (hatched boxes) and deadlines.
type tlBars struct {
	holds    []tlHold
	pauses   []tlSpan
	lane     map[int]float64
	involved map[int]bool
}

func (b *tlBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	cx := func(ms float64) vg.Length { return trX(math.Min(math.Max(ms, p.X.Min), p.X.Max)) }
	rect := func(x0, x1, y0, y1 vg.Length) []vg.Point {
		return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
	}
	laneH := (trY(0) - trY(-1)) // one lane in canvas units
	// span places [from, to] of client's lane; a very short span stays visible.
	span := func(client int, from, to int64) (x0, x1, yc vg.Length, ok bool) {
		y, ok := b.lane[client]
		if !ok {
			return 0, 0, 0, false
		}
		x0, x1 = cx(history.MS(from)), cx(history.MS(to))
		return x0, max(x1, x0+1.5), trY(y), true
	}
	for _, h := range b.holds {
		x0, x1, yc, ok := span(h.client, h.from, h.to)
		if !ok {
			continue
		}
		col := palette[0]
		if b.involved[h.client] {
			col = palette[3]
		}
		c.FillPolygon(withAlpha(col, 0xc0), rect(x0, x1, yc-laneH*0.22, yc+laneH*0.22))
		if h.lost {
			drawX(c, x1, yc, laneH*0.22, colBlack)
		}
		// A deadline matters when the client believed it held past it.
		if h.deadline > 0 && h.deadline < h.to {
			dl := history.MS(h.deadline)
			if dl >= p.X.Min && dl <= p.X.Max {
				xd := trX(dl)
				c.StrokeLine2(draw.LineStyle{Color: colDeadline, Width: 2.2}, xd, yc-laneH*0.42, xd, yc+laneH*0.42)
			}
		}
	}
	for _, s := range b.pauses {
		x0, x1, yc, ok := span(s.client, s.from, s.to)
		if !ok {
			continue
		}
		y0, y1 := yc-laneH*0.36, yc+laneH*0.36
		c.FillPolygon(color.NRGBA{0xff, 0xff, 0xff, 0x60}, rect(x0, x1, y0, y1))
		hatch(c, x0, x1, y0, y1, colBlack)
		ls := draw.LineStyle{Color: colBlack, Width: 0.8}
		c.StrokeLines(ls, append(rect(x0, x1, y0, y1), vg.Point{X: x0, Y: y0}))
	}
}

// hatch fills a box with diagonal lines.
func hatch(c draw.Canvas, x0, x1, y0, y1 vg.Length, col color.Color) {
	ls := draw.LineStyle{Color: col, Width: 0.6}
	step := vg.Length(5)
	h := y1 - y0
	for s := x0 - h; s < x1; s += step {
		// segment from (s, y0) to (s+h, y1), clipped to [x0, x1]
		ax, ay := s, y0
		bx, by := s+h, y1
		if ax < x0 {
			ay += x0 - ax
			ax = x0
		}
		if bx > x1 {
			by -= bx - x1
			bx = x1
		}
		if bx > ax {
			c.StrokeLine2(ls, ax, ay, bx, by)
		}
	}
}

func drawX(c draw.Canvas, x, y, r vg.Length, col color.Color) {
	ls := draw.LineStyle{Color: col, Width: 1.4}
	c.StrokeLine2(ls, x-r, y-r, x+r, y+r)
	c.StrokeLine2(ls, x-r, y+r, x+r, y-r)
}

var colDeadline = color.RGBA{0x8b, 0x00, 0x00, 0xff}

// thumbnails for the timeline legend
type boxThumb struct {
	col   color.NRGBA
	hatch bool
}

func (t boxThumb) Thumbnail(c *draw.Canvas) {
	h := c.Max.Y - c.Min.Y
	y0, y1 := c.Min.Y+h*0.15, c.Max.Y-h*0.15
	pts := []vg.Point{{X: c.Min.X, Y: y0}, {X: c.Max.X, Y: y0}, {X: c.Max.X, Y: y1}, {X: c.Min.X, Y: y1}}
	c.FillPolygon(t.col, pts)
	if t.hatch {
		hatch(*c, c.Min.X, c.Max.X, y0, y1, colBlack)
		c.StrokeLines(draw.LineStyle{Color: colBlack, Width: 0.8}, append(pts, pts[0]))
	}
}

type lineThumb struct {
	col      color.Color
	vertical bool
	x        bool
	dashed   bool
}

func (t lineThumb) Thumbnail(c *draw.Canvas) {
	xm, ym := (c.Min.X+c.Max.X)/2, (c.Min.Y+c.Max.Y)/2
	h := (c.Max.Y - c.Min.Y) / 2
	switch {
	case t.x:
		drawX(*c, xm, ym, h*0.6, t.col)
	case t.vertical:
		ls := draw.LineStyle{Color: t.col, Width: 1.4}
		if t.dashed {
			ls.Dashes = []vg.Length{3, 2}
		}
		c.StrokeLine2(ls, xm, c.Min.Y, xm, c.Max.Y)
	}
}

var serverGlyphs = map[string]struct {
	shape draw.GlyphDrawer
	col   color.RGBA
	label string
}{
	"set":     {draw.TriangleGlyph{}, palette[2], "redis: key set"},
	"del":     {draw.SquareGlyph{}, colBlack, "redis: key deleted"},
	"expired": {draw.CrossGlyph{}, palette[3], "redis: key expired"},
	"evicted": {draw.CrossGlyph{}, palette[6], "redis: key evicted"},
}

// tlView is what one timeline plot shows: its time range, the violating
// clients, and a lane (y) per client and per server node.
type tlView struct {
	lo, hi   int64
	involved map[int]bool
	lane     map[int]float64
	nodeLane map[string]float64
	ticks    plot.ConstantTicks
	// bottom is the y below the last lane.
	bottom float64
}

func plotTimeline(d *timelineData, a *metrics.Analysis, n int, base string) error {
	vw := newTLView(d)
	if len(vw.ticks) == 0 {
		return errNoData
	}
	title, bandLabel := timelineTitle(d, n)
	p := newPlot(title, "time since start (ms)", "")
	p.Y.Tick.Marker = vw.ticks
	p.Y.Min, p.Y.Max = vw.bottom+0.4, 1.1 // headroom above the first lane for fault labels
	p.X.Min, p.X.Max = history.MS(vw.lo), history.MS(vw.hi)
	l := &legend{}

	// The violation window, then faults, then bars and marks on top.
	// One set of bands, so that the window's label and the faults' labels
	// take different rows instead of printing over each other.
	fb := faultBands(a.Faults, history.MS(a.EndNS), 1)
	fb.items = append([]band{{x0: history.MS(d.winLo), x1: history.MS(d.winHi), label: bandLabel, col: palette[3]}}, fb.items...)
	p.Add(fb)
	addTimelineHolds(p, l, d, vw)
	if err := addServerMarks(p, l, d, vw); err != nil {
		return err
	}
	l.add(bandLabel, bandThumb{palette[3]})
	addFaultLegend(l, faultsInView(a, p.X.Min, p.X.Max))
	h := vg.Length(1.6+0.42*float64(len(vw.ticks))) * vg.Inch
	if h < 3*vg.Inch {
		h = 3 * vg.Inch
	}
	return savePlot(p, l, plotWidth, h, base)
}

// newTLView chooses the view: the window with some margin, widened to show
// the whole of the involved clients' holds that overlap the window; then a
// lane for each involved client, the others active in the view (up to
// timelineMaxLanes clients) and each server node with an event in view.
func newTLView(d *timelineData) *tlView {
	vw := &tlView{involved: map[int]bool{}, lane: map[int]float64{}, nodeLane: map[string]float64{}}
	pad := max((d.winHi-d.winLo)/2, timelineMinPadNS)
	lo, hi := d.winLo-pad, d.winHi+pad
	for _, c := range d.v.Clients {
		vw.involved[c] = true
	}
	for _, h := range d.holds {
		if vw.involved[h.client] && h.to >= d.winLo && h.from <= d.winHi {
			lo = min(lo, h.from-pad/4)
			hi = max(hi, h.to+pad/4)
		}
	}
	vw.lo, vw.hi = max(lo, d.lo), hi
	y := 0.0
	for _, c := range vw.laneClients(d) {
		vw.lane[c] = y
		label := fmt.Sprintf("client %d", c)
		if vw.involved[c] {
			label += " *"
		}
		vw.ticks = append(vw.ticks, plot.Tick{Value: y, Label: label})
		y--
	}
	for _, nn := range vw.laneNodes(d) {
		vw.nodeLane[nn] = y
		label := "redis"
		if nn != "" {
			label += " " + nn
		}
		vw.ticks = append(vw.ticks, plot.Tick{Value: y, Label: label})
		y--
	}
	vw.bottom = y
	return vw
}

// laneClients are the clients with a lane: the involved first, then others
// active in the view.
func (vw *tlView) laneClients(d *timelineData) []int {
	others := map[int]bool{}
	for _, h := range d.holds {
		if h.to >= vw.lo && h.from <= vw.hi && !vw.involved[h.client] {
			others[h.client] = true
		}
	}
	ids := slices.Sorted(maps.Keys(vw.involved))
	for _, c := range slices.Sorted(maps.Keys(others)) {
		if len(ids) >= timelineMaxLanes {
			break
		}
		ids = append(ids, c)
	}
	return ids
}

// laneNodes are the server nodes with an event in view.
func (vw *tlView) laneNodes(d *timelineData) []string {
	nodes := map[string]bool{}
	for _, m := range d.server {
		if m.t >= vw.lo && m.t <= vw.hi {
			nodes[m.lane] = true
		}
	}
	return slices.Sorted(maps.Keys(nodes))
}

// timelineTitle is a timeline's title and its window band's label.
func timelineTitle(d *timelineData, n int) (title, bandLabel string) {
	v := d.v
	title = d.title
	if title == "" {
		title = fmt.Sprintf("violation %d: %s on %s", n, v.Check, v.Key)
		if v.Cause != "" {
			title += " — " + v.Cause
		}
	}
	bandLabel = d.band
	if bandLabel == "" {
		bandLabel = "violation window"
	}
	return title, bandLabel
}

// addTimelineHolds draws the holds and pauses of the clients with a lane
// and says in the legend what they show.
func addTimelineHolds(p *plot.Plot, l *legend, d *timelineData, vw *tlView) {
	var holds []tlHold
	for _, h := range d.holds {
		if _, ok := vw.lane[h.client]; ok && h.to >= vw.lo && h.from <= vw.hi {
			holds = append(holds, h)
		}
	}
	var pauses []tlSpan
	for _, s := range d.pauses {
		if _, ok := vw.lane[s.client]; ok && s.to >= vw.lo && s.from <= vw.hi {
			pauses = append(pauses, s)
		}
	}
	p.Add(&tlBars{holds: holds, pauses: pauses, lane: vw.lane, involved: vw.involved})
	l.add("holds (ack → release)", boxThumb{col: withAlpha(palette[0], 0xc0)})
	if len(d.v.Clients) > 0 {
		l.add("holds of violating clients", boxThumb{col: withAlpha(palette[3], 0xc0)})
	}
	if slices.ContainsFunc(holds, func(h tlHold) bool { return h.deadline > 0 && h.deadline < h.to }) {
		l.add("lease deadline passed while held", lineThumb{col: colDeadline, vertical: true})
	}
	if len(pauses) > 0 {
		l.add("client paused", boxThumb{col: color.NRGBA{0xff, 0xff, 0xff, 0xff}, hatch: true})
	}
	if slices.ContainsFunc(holds, func(h tlHold) bool { return h.lost }) {
		l.add("lease lost (client noticed)", lineThumb{col: colBlack, x: true})
	}
}

// addServerMarks draws the server's events in view on their nodes' lanes,
// a glyph per kind of event.
func addServerMarks(p *plot.Plot, l *legend, d *timelineData, vw *tlView) error {
	byKind := map[string]plotter.XYs{}
	for _, m := range d.server {
		if m.t < vw.lo || m.t > vw.hi {
			continue
		}
		k := m.detail
		if _, ok := serverGlyphs[k]; !ok {
			k = "other"
		}
		byKind[k] = append(byKind[k], plotter.XY{X: history.MS(m.t), Y: vw.nodeLane[m.lane]})
	}
	for _, k := range []string{"set", "del", "expired", "evicted", "other"} {
		xys := byKind[k]
		if len(xys) == 0 {
			continue
		}
		g, ok := serverGlyphs[k]
		if !ok {
			g.shape, g.col, g.label = draw.CircleGlyph{}, colGrey, "redis: other event"
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: g.col, Radius: 3.5, Shape: g.shape}
		p.Add(sc)
		l.add(g.label, sc)
	}
	return nil
}

// faultsInView are a's faults active between fromMS and toMS.
func faultsInView(a *metrics.Analysis, fromMS, toMS float64) []metrics.FaultSummary {
	var inView []metrics.FaultSummary
	for _, f := range a.Faults {
		to := f.HealedMS
		if to == 0 {
			to = history.MS(a.EndNS)
		}
		if to >= fromMS && f.AtMS <= toMS {
			inView = append(inView, f)
		}
	}
	return inView
}
