package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// MatrixCell is one lock × scenario result of a matrix run.
type MatrixCell struct {
	Scenario string
	Lock     string
	// Verdict: valid | invalid | unknown | n/a (scenario does not apply to
	// the lock) | error (the run failed).
	Verdict string
	// Expected is false when the verdicts did not match the scenario's
	// expectation for the lock; the cell is then marked.
	Expected bool
	// Label, when set, is written instead of Verdict (a multi-seed cell
	// whose seeds disagree: "invalid 2/3"; Verdict colours it).
	Label string
}

var verdictColors = map[string]color.RGBA{
	"valid":   {0x59, 0xa1, 0x4f, 0xff},
	"invalid": {0xe1, 0x57, 0x59, 0xff},
	"unknown": {0xb8, 0xb8, 0xb8, 0xff},
	"n/a":     {0xf4, 0xf4, 0xf4, 0xff},
	"error":   {0x70, 0x70, 0x70, 0xff},
}

// PlotMatrix writes path.png and path.svg (path may carry either
// extension): a lock (columns) × scenario (rows) grid, each cell coloured by
// verdict (valid green, invalid red, unknown grey) with the verdict written
// in it, and a thick black frame and "!" where the result was not what the
// scenario expects. Rows and columns keep the order of first appearance.
func PlotMatrix(cells []MatrixCell, path string) error {
	if len(cells) == 0 {
		return fmt.Errorf("plot matrix: %w", errNoData)
	}
	var locks, scens []string
	li, si := map[string]int{}, map[string]int{}
	for _, c := range cells {
		if _, ok := li[c.Lock]; !ok {
			li[c.Lock] = len(locks)
			locks = append(locks, c.Lock)
		}
		if _, ok := si[c.Scenario]; !ok {
			si[c.Scenario] = len(scens)
			scens = append(scens, c.Scenario)
		}
	}
	p := newPlot("verdict matrix (! = not as expected)", "", "")
	p.Add(&matrixCells{cells: cells, li: li, si: si})
	var xt, yt plot.ConstantTicks
	for i, l := range locks {
		xt = append(xt, plot.Tick{Value: float64(i), Label: l})
	}
	for i, s := range scens {
		yt = append(yt, plot.Tick{Value: -float64(i), Label: s})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = xt, yt
	p.X.Min, p.X.Max = -0.5, float64(len(locks))-0.5
	p.Y.Min, p.Y.Max = -float64(len(scens))+0.5, 0.5
	p.X.Tick.Length, p.Y.Tick.Length = 0, 0
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.LineStyle.Width, p.Y.LineStyle.Width = 0, 0
	longest := 0
	for _, l := range locks {
		longest = max(longest, len(l))
	}
	if longest*len(locks) > 90 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	l := &legend{}
	for _, v := range []string{"valid", "invalid", "unknown", "error", "n/a"} {
		l.add(v, bandThumb2{verdictColors[v]})
	}
	w := vg.Length(2.6+1.15*float64(len(locks)))*vg.Inch + l.width()
	h := vg.Length(1.3+0.36*float64(len(scens))) * vg.Inch
	return savePlot(p, l, w, h, trimExt(path))
}

type matrixCells struct {
	cells  []MatrixCell
	li, si map[string]int
}

func (m *matrixCells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := p.X.Tick.Label
	sty.Rotation = 0
	sty.Font.Size = 9
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	for _, cell := range m.cells {
		x, y := float64(m.li[cell.Lock]), -float64(m.si[cell.Scenario])
		x0, x1 := trX(x-0.5)+1.5, trX(x+0.5)-1.5
		y0, y1 := trY(y-0.5)+1.5, trY(y+0.5)-1.5
		col, ok := verdictColors[cell.Verdict]
		if !ok {
			col = verdictColors["unknown"]
		}
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(col, pts)
		label := cell.Verdict
		if cell.Label != "" {
			label = cell.Label
		}
		if !cell.Expected && cell.Verdict != "n/a" {
			c.StrokeLines(draw.LineStyle{Color: colBlack, Width: 2.5}, append(pts, pts[0]))
			label = "! " + label
		}
		tsty := sty
		tsty.Color = color.White
		if cell.Verdict == "n/a" || cell.Verdict == "unknown" {
			tsty.Color = colBlack
		}
		c.FillText(tsty, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, label)
	}
}

// bandThumb2 is an opaque legend swatch.
type bandThumb2 struct{ col color.RGBA }

func (t bandThumb2) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(t.col, pts)
	c.StrokeLines(draw.LineStyle{Color: colGrey, Width: 0.5}, append(pts, pts[0]))
}
