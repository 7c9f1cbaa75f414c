package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// errNoData is returned by a plot that has nothing to show; Render skips
// such plots silently.
var errNoData = errors.New("no data to plot")

// percentileTicks label the 1/(1-p) axis with the percentile it stands for.
var percentileTicks = []struct {
	x     float64
	label string
}{
	{1, "0%"}, {2, "50%"}, {10, "90%"}, {100, "99%"}, {1e3, "99.9%"}, {1e4, "99.99%"},
	{1e5, "99.999%"}, {1e6, "99.9999%"}, {1e7, "99.99999%"},
}

// percentileXYs is an HdrHistogram percentile distribution as plot points:
// x = 1/(1-p), y = latency in µs; the maximum is placed at x = count.
func percentileXYs(h *hdrhistogram.Histogram) plotter.XYs {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	var xys plotter.XYs
	for _, b := range h.CumulativeDistributionWithTicks(5) {
		if b.Quantile >= 100 {
			continue
		}
		x := 1 / (1 - b.Quantile/100)
		xys = append(xys, plotter.XY{X: x, Y: math.Max(float64(b.ValueAt)/1e3, 1e-3)})
	}
	last := math.Max(float64(h.TotalCount()), 1)
	if len(xys) > 0 && xys[len(xys)-1].X > last {
		last = xys[len(xys)-1].X
	}
	xys = append(xys, plotter.XY{X: last, Y: math.Max(float64(h.Max())/1e3, 1e-3)})
	if xys[0].X > 1 {
		xys = append(plotter.XYs{{X: 1, Y: xys[0].Y}}, xys...)
	}
	return xys
}

type percentileLine struct {
	name string
	xys  plotter.XYs
}

func plotPercentileLines(title string, lines []percentileLine, base string) error {
	if len(lines) == 0 {
		return errNoData
	}
	p := newPlot(title, "percentile", "latency")
	l := &legend{}
	xmax, ylo, yhi := 100.0, math.Inf(1), 0.0
	for i, ln := range lines {
		line, err := plotter.NewLine(ln.xys)
		if err != nil {
			return fmt.Errorf("%s: %w", ln.name, err)
		}
		line.LineStyle = lineStyle(palette[i%len(palette)], 1.6)
		p.Add(line)
		l.add(ln.name, line)
		for _, xy := range ln.xys {
			xmax = math.Max(xmax, xy.X)
			ylo = math.Min(ylo, xy.Y)
			yhi = math.Max(yhi, xy.Y)
		}
	}
	p.X.Scale = plot.LogScale{}
	p.X.Min = 1
	p.X.Max = math.Pow(10, math.Ceil(math.Log10(xmax)))
	var ticks plot.ConstantTicks
	for _, t := range percentileTicks {
		if t.x <= p.X.Max {
			ticks = append(ticks, plot.Tick{Value: t.x, Label: t.label})
		}
	}
	p.X.Tick.Marker = ticks
	setLogLatencyAxis(&p.Y, ylo, yhi)
	return savePlot(p, l, plotWidth, plotHeight, base)
}

// PlotPercentiles writes base.png and base.svg: the latency percentile
// distribution of each op (acquire, release, cycle, handoff) in
// HdrHistogram's style, x = 1/(1-p) on a log axis labelled with
// percentiles, y = latency on a log axis.
func PlotPercentiles(a *metrics.Analysis, base string) error {
	var lines []percentileLine
	for _, op := range metrics.Ops {
		h := a.Histograms[op]
		if xys := percentileXYs(h); xys != nil {
			lines = append(lines, percentileLine{name: fmt.Sprintf("%s (n=%d)", op, h.TotalCount()), xys: xys})
		}
	}
	return plotPercentileLines(runTitle(a.Meta, "latency percentiles"), lines, base)
}

// PlotPercentilesCompare writes path.png and path.svg: op's percentile
// distribution for several runs, one line per run (runs are keyed by what
// the legend should say, usually the lock name).
func PlotPercentilesCompare(runs map[string]*metrics.Analysis, op string, path string) error {
	names := make([]string, 0, len(runs))
	for n := range runs {
		names = append(names, n)
	}
	sort.Strings(names)
	var lines []percentileLine
	for _, n := range names {
		a := runs[n]
		if a == nil {
			continue
		}
		h := a.Histograms[op]
		if xys := percentileXYs(h); xys != nil {
			lines = append(lines, percentileLine{name: fmt.Sprintf("%s (n=%d)", n, h.TotalCount()), xys: xys})
		}
	}
	if len(lines) == 0 {
		return fmt.Errorf("plot %s percentiles: no run recorded %s latencies: %w", op, op, errNoData)
	}
	return plotPercentileLines(op+" latency percentiles", lines, trimExt(path))
}

// PlotLatencyOverTime writes base.png and base.svg: one point per sampled
// acquire (circle) and release (triangle), x = invoke time, y = latency
// (log), coloured by result; fault windows shaded and labelled.
func PlotLatencyOverTime(a *metrics.Analysis, base string) error {
	if len(a.Samples) == 0 {
		return errNoData
	}
	p := newPlot(runTitle(a.Meta, "latency over time"), "time since start (s)", "latency")
	if a.SampledFrom > int64(len(a.Samples)) {
		p.X.Label.Text += fmt.Sprintf(" · %d of %d operations shown (uniform sample)", len(a.Samples), a.SampledFrom)
	}
	l := &legend{}
	type group struct {
		op  string
		res string
	}
	groups := map[group]plotter.XYs{}
	ylo, yhi := math.Inf(1), 0.0
	for _, s := range a.Samples {
		y := math.Max(float64(s.LatencyNS)/1e3, 0.5)
		ylo, yhi = math.Min(ylo, y), math.Max(yhi, y)
		g := group{s.Op, string(s.Result)}
		if g.res != "ok" && g.res != "fail" {
			g.res = "unknown"
		}
		groups[g] = append(groups[g], plotter.XY{X: float64(s.T) / 1e9, Y: y})
	}
	endS := float64(a.EndNS) / 1e9
	p.Add(faultBands(a.Faults, history.MS(a.EndNS), 1e3))
	p.Add(phaseLines(a, 1e9))
	results := []struct {
		name string
		col  color.RGBA
		rad  vg.Length
	}{{"ok", colOK, 1.1}, {"fail", colFail, 1.6}, {"unknown", colUnknown, 2.2}}
	// ok first, so the rarer failures are drawn on top of them.
	for _, r := range results {
		for _, op := range []string{metrics.OpAcquire, metrics.OpRelease} {
			xys := groups[group{op, r.name}]
			if len(xys) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: withAlpha(r.col, 0xb0), Radius: r.rad, Shape: draw.CircleGlyph{}}
			if op == metrics.OpRelease {
				sc.GlyphStyle.Shape = draw.TriangleGlyph{}
			}
			p.Add(sc)
			l.add(fmt.Sprintf("%s %s (%d)", op, r.name, len(xys)), sc)
		}
	}
	addFaultLegend(l, a.Faults)
	p.X.Min, p.X.Max = 0, math.Max(endS, 1e-3)
	setLogLatencyAxis(&p.Y, ylo, yhi)
	return savePlot(p, l, plotWidth, plotHeight, base)
}

// PlotThroughput writes base.png and base.svg: completed cycles per second
// per time bucket, with failed acquires per second, fault windows shaded.
func PlotThroughput(a *metrics.Analysis, base string) error {
	s := a.Series
	if len(s.Cycles) == 0 {
		return errNoData
	}
	p := newPlot(runTitle(a.Meta, "throughput over time"), "time since start (s)", "per second")
	l := &legend{}
	p.Add(faultBands(a.Faults, history.MS(a.EndNS), 1e3))
	p.Add(phaseLines(a, 1e9))
	// At most ~150 points: wider buckets read better than a noisy line.
	group := (len(s.Cycles) + 149) / 150
	sec := float64(s.BucketNS) / 1e9
	mk := func(counts []int64) plotter.XYs {
		var xys plotter.XYs
		for i := 0; i < len(counts); i += group {
			j := min(i+group, len(counts))
			var sum int64
			for _, c := range counts[i:j] {
				sum += c
			}
			w := float64(j-i) * sec
			xys = append(xys, plotter.XY{X: (float64(i) + float64(j-i)/2) * sec, Y: float64(sum) / w})
		}
		return xys
	}
	ymax := 1.0
	series := []struct {
		name   string
		counts []int64
		col    color.RGBA
		width  vg.Length
	}{
		{"cycles/s", s.Cycles, colOK, 1.6},
		{"failed acquires/s", s.AcquireFail, colFail, 1},
		{"unknown acquires/s", s.AcquireUnknown, colUnknown, 1},
	}
	for i, ser := range series {
		any := false
		for _, c := range ser.counts {
			any = any || c > 0
		}
		if i > 0 && !any {
			continue
		}
		xys := mk(ser.counts)
		for _, xy := range xys {
			ymax = math.Max(ymax, xy.Y)
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		line.LineStyle = lineStyle(ser.col, ser.width)
		p.Add(line)
		l.add(ser.name, line)
	}
	addFaultLegend(l, a.Faults)
	p.X.Min, p.X.Max = 0, math.Max(float64(len(s.Cycles))*sec, float64(a.EndNS)/1e9)
	p.Y.Min, p.Y.Max = 0, ymax*1.15
	return savePlot(p, l, plotWidth, plotHeight*0.8, base)
}

func runTitle(meta map[string]any, what string) string {
	s := what
	parts := []string{}
	for _, k := range []string{"scenario", "lock"} {
		if v := metrics.MetaString(meta, k); v != "" {
			parts = append(parts, v)
		}
	}
	if len(parts) > 0 {
		s += " — " + parts[0]
		if len(parts) > 1 {
			s += " / " + parts[1]
		}
	}
	return s
}

func trimExt(path string) string {
	for _, ext := range []string{".png", ".svg"} {
		if len(path) > len(ext) && path[len(path)-len(ext):] == ext {
			return path[:len(path)-len(ext)]
		}
	}
	return path
}
