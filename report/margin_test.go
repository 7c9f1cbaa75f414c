package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The margin plot is written as a PNG that decodes and an SVG, with a
// panel per unit and the "never" rows labelled.
func TestPlotMargins(t *testing.T) {
	dir := t.TempDir()
	rows := []MarginRow{
		{Template: "pause-client@before-write", Unit: "×TTL", Lock: 1.05, RefNever: true, Lo: 0.1, Hi: 3},
		{Template: "kill-node", Unit: "×TTL", LockNever: true, Ref: 0.1, Lo: 0.1, Hi: 3},
		{Template: "stall-commands", Unit: "×TTL", LockNever: true, RefNever: true, Lo: 0.1, Hi: 3},
		{Template: "clock-skew-rate(slow)", Unit: "rate", Lock: 0.8, RefNever: true, Lo: 0.1, Hi: 0.95, Falling: true},
		{Template: "clock-skew-rate(fast)", Unit: "rate", LockNever: true, RefNever: true, Lo: 1.05, Hi: 3},
	}
	base := filepath.Join(dir, "margin")
	if err := PlotMargins("simple", "fenced", rows, base+".png"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(base + ".png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("margin.png: %v", err)
	}
	if r := img.Bounds(); r.Dx() < 800 || r.Dy() < 300 {
		t.Errorf("margin.png is %v", r)
	}
	svg, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pause-client@before-write", "clock-skew-rate(slow) (≤)", "fenced never", "simple never", "searched to 3", "true rate"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("margin.svg lacks %q", want)
		}
	}
	if err := PlotMargins("simple", "fenced", nil, base); err == nil {
		t.Error("no rows: want an error")
	}
}
