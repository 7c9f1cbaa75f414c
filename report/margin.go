package report

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// MarginRow is one margin template in the margin plot: the smallest
// failing magnitude of the lock and of its reference, in Unit.
type MarginRow struct {
	Template string
	// Unit is "×TTL" (a time, multiples of the TTL) or "rate" (a clock's
	// rate); the rows of each unit get their own panel.
	Unit string
	// Lock and Ref are where each fails; Never means it did not fail
	// anywhere in the searched range [Lo, Hi].
	Lock, Ref           float64
	LockNever, RefNever bool
	Lo, Hi              float64
	// Falling: the lock fails at this value and below (a clock running
	// slow); a "never" is then drawn below Lo instead of above Hi.
	Falling bool
}

// PlotMargins writes path.png and path.svg (path may carry either
// extension): per template a row, the lock's smallest failing magnitude
// (circle) and the reference's (square); a template that never failed in
// its searched range is drawn as a hollow marker past the range's end,
// labelled "never", beyond a dashed line marking the end of the search.
// Time templates (×TTL) and rate templates get a panel each.
func PlotMargins(lock, ref string, rows []MarginRow, path string) (err error) {
	var units []string
	byUnit := map[string][]MarginRow{}
	for _, r := range rows {
		if _, ok := byUnit[r.Unit]; !ok {
			units = append(units, r.Unit)
		}
		byUnit[r.Unit] = append(byUnit[r.Unit], r)
	}
	if len(units) == 0 {
		return fmt.Errorf("plot margins: %w", errNoData)
	}
	var panels []*plot.Plot
	var weights []float64
	l := &legend{}
	l.add(lock+" fails from", marginThumb{colFail, draw.CircleGlyph{}})
	if ref != lock {
		l.add(ref+" fails from", marginThumb{colOK, draw.BoxGlyph{}})
	}
	l.add("never (in the range searched)", marginThumb{colGrey, draw.RingGlyph{}})
	for i, u := range units {
		title := ""
		if i == 0 {
			title = fmt.Sprintf("safety margins: %s against %s", lock, ref)
		}
		p, err := marginPanel(title, u, byUnit[u], lock, ref)
		if err != nil {
			return err
		}
		panels = append(panels, p)
		weights = append(weights, 0.9+0.42*float64(len(byUnit[u])))
	}
	total := 0.0
	for _, w := range weights {
		total += w
	}
	w := 10*vg.Inch + l.width()
	h := vg.Length(total) * vg.Inch
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("render %s: %v", filepath.Base(path), r)
		}
	}()
	drawAll := func(c draw.Canvas) {
		top := c.Max.Y
		for i, p := range panels {
			ph := vg.Length(weights[i]/total) * (c.Max.Y - c.Min.Y)
			pc := c
			pc.Max.Y, pc.Min.Y = top, top-ph
			top -= ph
			if i == 0 {
				drawWithLegend(pc, p, l)
				continue
			}
			// The legend once; the panels below keep its column empty so
			// that their axes line up with the first's.
			p.Draw(draw.Crop(draw.Crop(pc, 6, -8, 4, -4), 0, -l.width(), 0, 0))
		}
	}
	base := trimExt(path)
	png := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))
	drawAll(draw.New(png))
	if err := writeFileAtomic(base+".png", vgimg.PngCanvas{Canvas: png}); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	drawAll(draw.New(svg))
	return writeFileAtomic(base+".svg", svg)
}

// marginPanel is one unit's rows: y the templates (first on top), x the
// magnitude.
func marginPanel(title, unit string, rows []MarginRow, lock, ref string) (*plot.Plot, error) {
	withRef := ref != lock
	xlabel := "smallest failing magnitude (×TTL)"
	if unit != "×TTL" {
		xlabel = "failing " + unit + " (1 = a true clock)"
	}
	p := newPlot(title, xlabel, "")
	lo, hi := rows[0].Lo, rows[0].Hi
	for _, r := range rows {
		lo, hi = min(lo, r.Lo), max(hi, r.Hi)
	}
	span := hi - lo
	p.X.Min, p.X.Max = 0, hi+0.3*span
	p.Y.Min, p.Y.Max = -float64(len(rows))+0.4, 0.6
	var yt plot.ConstantTicks
	var lockXY, refXY, neverXY plotter.XYs
	var neverLabels []string
	var ends vlines
	seenEnd := map[float64]bool{}
	for i, r := range rows {
		y := -float64(i)
		label := r.Template
		if r.Falling {
			label += " (≤)"
		}
		yt = append(yt, plot.Tick{Value: y, Label: label})
		neverX := r.Hi + 0.06*span
		end := r.Hi
		if r.Falling {
			neverX, end = r.Lo/2, r.Lo
		}
		if !seenEnd[end] {
			seenEnd[end] = true
			ends = append(ends, vline{x: end, label: "searched to " + strconv.FormatFloat(end, 'g', 3, 64), col: colGrey})
		}
		put := func(v float64, never bool, dy float64, xy *plotter.XYs, who string) {
			if never {
				neverXY = append(neverXY, plotter.XY{X: neverX, Y: y + dy})
				neverLabels = append(neverLabels, who+" never")
				return
			}
			*xy = append(*xy, plotter.XY{X: v, Y: y + dy})
		}
		dy := 0.0
		if withRef {
			dy = 0.2
			put(r.Ref, r.RefNever, -dy, &refXY, ref)
		}
		put(r.Lock, r.LockNever, dy, &lockXY, lock)
	}
	p.Y.Tick.Marker = yt
	p.Y.Tick.Length = 0
	p.Add(ends)
	if unit != "×TTL" {
		p.Add(vlines{{x: 1, label: "true rate", col: colBlack}})
	}
	add := func(xy plotter.XYs, col color.RGBA, g draw.GlyphDrawer) error {
		if len(xy) == 0 {
			return nil
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("plot margins: %w", err)
		}
		s.GlyphStyle = draw.GlyphStyle{Color: col, Radius: 5, Shape: g}
		p.Add(s)
		return nil
	}
	if err := add(lockXY, colFail, draw.CircleGlyph{}); err != nil {
		return nil, err
	}
	if err := add(refXY, colOK, draw.BoxGlyph{}); err != nil {
		return nil, err
	}
	if err := add(neverXY, colGrey, draw.RingGlyph{}); err != nil {
		return nil, err
	}
	if len(neverXY) > 0 {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: neverXY, Labels: neverLabels})
		if err != nil {
			return nil, fmt.Errorf("plot margins: %w", err)
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = 8
			lb.TextStyle[i].Color = colGrey
		}
		lb.Offset = vg.Point{X: 8, Y: -3}
		p.Add(lb)
	}
	return p, nil
}

// marginThumb is a legend entry: the glyph of a series.
type marginThumb struct {
	col   color.RGBA
	shape draw.GlyphDrawer
}

func (t marginThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: t.col, Radius: 4, Shape: t.shape}, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2})
}
