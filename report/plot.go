package report

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot sizes and resolution. PNGs are rendered at pngDPI.
const (
	plotWidth  = 10 * vg.Inch
	plotHeight = 5 * vg.Inch
	pngDPI     = 110
)

// Colours: the Tableau 10 palette, readable on white and for most colour
// blindness.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, // blue
	{0xf2, 0x8e, 0x2b, 0xff}, // orange
	{0x59, 0xa1, 0x4f, 0xff}, // green
	{0xe1, 0x57, 0x59, 0xff}, // red
	{0x76, 0xb7, 0xb2, 0xff}, // teal
	{0xed, 0xc9, 0x48, 0xff}, // yellow
	{0xb0, 0x7a, 0xa1, 0xff}, // purple
	{0xff, 0x9d, 0xa7, 0xff}, // pink
	{0x9c, 0x75, 0x5f, 0xff}, // brown
	{0xba, 0xb0, 0xac, 0xff}, // grey
	{0x3b, 0x5b, 0x4f, 0xff}, // dark green
	{0x1f, 0x3a, 0x93, 0xff}, // navy
}

var (
	colOK      = palette[0]
	colFail    = palette[1]
	colUnknown = palette[3]
	colGrey    = color.RGBA{0x88, 0x88, 0x88, 0xff}
	colBlack   = color.RGBA{0x22, 0x22, 0x22, 0xff}
)

func withAlpha(c color.RGBA, a uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
}

// familyColors are the fault families' palette indices: the kinds of a
// family (kill and restart; partition and a client's cut; the clocks)
// share a colour. TestEveryFaultKindHasAColour keeps it complete.
var familyColors = map[string]int{
	history.FamilyClientFreeze: 6, history.FamilyClientCrash: 0, history.FamilyClientStall: 8, history.FamilyCut: 4,
	history.FamilyNodeFreeze: 1, history.FamilyNodeLoss: 3, history.FamilyFailover: 7, history.FamilySlowLink: 5,
	history.FamilyReplication: 9, history.FamilyClock: 2, history.FamilyReshard: 10,
	history.FamilyApplication: 11,
}

// kindColor gives every fault kind its family's colour (an unknown kind,
// from a history written by another build, one by its name's hash).
func kindColor(kind string) color.RGBA {
	if i, ok := familyColors[history.FaultFamily(kind)]; ok {
		return palette[i]
	}
	h := fnv.New32a()
	h.Write([]byte(kind))
	return palette[int(h.Sum32()%uint32(len(palette)))]
}

// newPlot returns a plot with the house style: title, axis labels, a light
// grid.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 13
	p.Title.Padding = 6
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Label.TextStyle.Font.Size = 11
	p.Y.Label.TextStyle.Font.Size = 11
	p.X.Tick.Label.Font.Size = 9
	p.Y.Tick.Label.Font.Size = 9
	p.X.Tick.Marker = niceTicks{n: 10}
	p.Y.Tick.Marker = niceTicks{n: 6}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{0xe4}
	g.Horizontal.Color = color.Gray{0xe4}
	p.Add(g)
	return p
}

// legend is drawn in its own column right of the plot, so it never hides
// data.
type legend struct {
	entries []legendEntry
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

func (l *legend) add(name string, thumbs ...plot.Thumbnailer) {
	l.entries = append(l.entries, legendEntry{name, thumbs})
}

func (l *legend) plotLegend() plot.Legend {
	pl := plot.NewLegend()
	pl.Top, pl.Left = true, true
	pl.TextStyle.Font.Size = 9
	pl.ThumbnailWidth = 0.3 * vg.Inch
	pl.Padding = 2
	for _, e := range l.entries {
		pl.Add(e.name, e.thumbs...)
	}
	return pl
}

func (l *legend) width() vg.Length {
	if l == nil || len(l.entries) == 0 {
		return 0
	}
	pl := l.plotLegend()
	var w vg.Length
	for _, e := range l.entries {
		if tw := pl.TextStyle.Width(" " + e.name); tw > w {
			w = tw
		}
	}
	return w + pl.ThumbnailWidth + 14
}

// draw draws p (and l beside it) onto c.
func drawWithLegend(c draw.Canvas, p *plot.Plot, l *legend) {
	c = draw.Crop(c, 6, -8, 4, -4) // a margin, so no label touches the edge
	lw := l.width()
	if lw == 0 {
		p.Draw(c)
		return
	}
	p.Draw(draw.Crop(c, 0, -lw, 0, 0))
	top := vg.Length(0)
	if p.Title.Text != "" {
		top = p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding + 8
	}
	lc := draw.Crop(c, c.Max.X-c.Min.X-lw+8, 0, 0, -top)
	pl := l.plotLegend()
	pl.Draw(lc)
}

// savePlot renders p as base.png and base.svg. A panic inside gonum/plot
// (it panics on some degenerate inputs) becomes an error: a bad plot must
// not lose the rest of the report.
func savePlot(p *plot.Plot, l *legend, w, h vg.Length, base string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("render %s: %v", filepath.Base(base), r)
		}
	}()
	png := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))
	drawWithLegend(draw.New(png), p, l)
	if err := writeFileAtomic(base+".png", vgimg.PngCanvas{Canvas: png}); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	drawWithLegend(draw.New(svg), p, l)
	return writeFileAtomic(base+".svg", svg)
}

func writeFileAtomic(path string, wt io.WriterTo) error {
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// latencyTicks labels a log axis of microseconds with units (10µs, 1ms,
// 2s): decades always, 2 and 5 between them when the range is narrow.
type latencyTicks struct{}

func (latencyTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= 0 || max < min {
		return nil
	}
	lo := int(math.Floor(math.Log10(min)))
	hi := int(math.Ceil(math.Log10(max)))
	narrow := hi-lo <= 2
	var ticks []plot.Tick
	labelled := 0
	for e := lo; e <= hi; e++ {
		base := math.Pow(10, float64(e))
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (narrow && (m == 2 || m == 5)) {
				t.Label = metrics.FormatUS(v)
				labelled++
			}
			ticks = append(ticks, t)
		}
	}
	if labelled < 2 {
		ticks = append(ticks, plot.Tick{Value: min, Label: metrics.FormatUS(min)}, plot.Tick{Value: max, Label: metrics.FormatUS(max)})
	}
	return ticks
}

// setLogLatencyAxis sets a log axis spanning [lo, hi] µs, padded to
// whole decades (or half a decade for narrow ranges).
func setLogLatencyAxis(a *plot.Axis, lo, hi float64) {
	if lo <= 0 {
		lo = 1
	}
	if hi <= lo {
		hi = lo * 10
	}
	a.Scale = plot.LogScale{}
	a.Tick.Marker = latencyTicks{}
	a.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	a.Max = math.Pow(10, math.Ceil(math.Log10(hi)))
	if a.Max <= a.Min {
		a.Max = a.Min * 10
	}
}

// band is a shaded time window (a fault) with a label.
type band struct {
	x0, x1 float64
	label  string
	col    color.RGBA
	faded  bool // the fault did not take effect
}

// bands shades fault windows over the whole height of the data area and
// labels them along the top, in up to three rows so labels do not collide.
type bands struct {
	items []band
}

func faultBands(faults []metrics.FaultSummary, endMS, unit float64) *bands {
	b := &bands{}
	for _, f := range faults {
		to := f.HealedMS
		if to <= 0 {
			to = endMS
		}
		label := f.Kind
		if f.Target != "" {
			label += " " + f.Target
		}
		if !f.Applied {
			label += " (no effect)"
		}
		b.items = append(b.items, band{x0: f.AtMS / unit, x1: to / unit, label: label, col: kindColor(f.Kind), faded: !f.Applied})
	}
	sort.SliceStable(b.items, func(i, j int) bool { return b.items[i].x0 < b.items[j].x0 })
	return b
}

func (b *bands) Plot(c draw.Canvas, p *plot.Plot) {
	if len(b.items) == 0 {
		return
	}
	trX, _ := p.Transforms(&c)
	sty := p.X.Tick.Label
	sty.Font.Size = 8
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	lineH := sty.Height("Mg") + 1
	var rowEnd []vg.Length
	const maxRows = 3
	for _, it := range b.items {
		x0c, x1c := math.Max(it.x0, p.X.Min), math.Min(it.x1, p.X.Max)
		if x1c < x0c {
			continue
		}
		x0, x1 := trX(x0c), trX(x1c)
		if x1-x0 < 2 {
			x1 = x0 + 2 // an instant fault stays visible
		}
		a := uint8(0x38)
		col := it.col
		if it.faded {
			a, col = 0x20, palette[9]
		}
		c.FillPolygon(withAlpha(col, a), []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		c.StrokeLine2(draw.LineStyle{Color: withAlpha(col, 0xa0), Width: 0.6}, x0, c.Min.Y, x0, c.Max.Y)

		w := sty.Width(it.label)
		row := -1
		for r, end := range rowEnd {
			if end <= x0 {
				row = r
				break
			}
		}
		if row < 0 && len(rowEnd) < maxRows {
			rowEnd = append(rowEnd, 0)
			row = len(rowEnd) - 1
		}
		if row < 0 {
			continue // no room: the band is still shaded
		}
		lx := x0 + 2
		if lx+w > c.Max.X {
			lx = max(c.Min.X, c.Max.X-w-2)
		}
		rowEnd[row] = lx + w + 6
		tsty := sty
		tsty.Color = darken(col)
		c.FillText(tsty, vg.Point{X: lx, Y: c.Max.Y - 2 - vg.Length(row)*lineH}, it.label)
	}
}

func darken(c color.RGBA) color.RGBA {
	return color.RGBA{R: c.R * 6 / 10, G: c.G * 6 / 10, B: c.B * 6 / 10, A: 0xff}
}

// bandThumb is a legend thumbnail for fault shading.
type bandThumb struct{ col color.RGBA }

func (t bandThumb) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(withAlpha(t.col, 0x50), pts)
}

// addFaultLegend adds one legend entry per fault kind present.
func addFaultLegend(l *legend, faults []metrics.FaultSummary) {
	seen := map[string]bool{}
	for _, f := range faults {
		if seen[f.Kind] {
			continue
		}
		seen[f.Kind] = true
		l.add("fault: "+f.Kind, bandThumb{kindColor(f.Kind)})
	}
}

// vline draws a labelled dashed vertical line (phase boundaries,
// violation windows).
type vline struct {
	x     float64
	label string
	col   color.RGBA
}

type vlines []vline

func (vs vlines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := p.X.Tick.Label
	sty.Font.Size = 8
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	for _, v := range vs {
		if v.x < p.X.Min || v.x > p.X.Max {
			continue
		}
		x := trX(v.x)
		c.StrokeLine2(draw.LineStyle{Color: v.col, Width: 1, Dashes: []vg.Length{4, 3}}, x, c.Min.Y, x, c.Max.Y)
		if v.label != "" {
			sty.Color = v.col
			c.FillText(sty, vg.Point{X: x + 2, Y: c.Min.Y + 2}, v.label)
		}
	}
}

// phaseLines marks where the workload ended (heal began) and recovery.
func phaseLines(a *metrics.Analysis, unit float64) vlines {
	var vs vlines
	for _, name := range []string{"heal", "recovery"} {
		if t, ok := a.PhasesNS[name]; ok {
			vs = append(vs, vline{x: float64(t) / unit, label: name, col: colGrey})
		}
	}
	return vs
}

func lineStyle(c color.Color, width vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: width}
}

// niceTicks labels a linear axis with about n round steps (1, 2, 2.5, 5 ×
// 10^k), with unlabelled minor ticks between them.
type niceTicks struct{ n int }

func (t niceTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) || math.IsInf(max-min, 0) {
		return nil
	}
	n := t.n
	if n <= 0 {
		n = 8
	}
	raw := (max - min) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	minor := step / 5
	if math.Abs(step/mag-2.5) < 1e-9 || math.Abs(step/mag-2) < 1e-9 {
		minor = step / 2
	}
	prec := 0
	if step < 1 {
		prec = int(math.Ceil(-math.Log10(step) - 1e-9))
		if math.Abs(step/mag-2.5) < 1e-9 {
			prec++
		}
	}
	var ticks []plot.Tick
	first := math.Ceil(min/minor-1e-9) * minor
	for v := first; v <= max+minor*1e-6; v += minor {
		r := math.Round(v/minor)*minor + 0 // no "-0"
		if math.Abs(r) < minor*1e-6 {
			r = 0
		}
		tk := plot.Tick{Value: r}
		if q := r / step; math.Abs(q-math.Round(q)) < 1e-6 {
			tk.Label = strconv.FormatFloat(r, 'f', prec, 64)
		}
		ticks = append(ticks, tk)
	}
	return ticks
}
