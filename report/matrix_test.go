package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A multi-seed cell whose seeds disagree shows its rate, not a verdict.
func TestPlotMatrixLabel(t *testing.T) {
	dir := renderDir(t)
	cells := []MatrixCell{
		{Scenario: "gc-pause", Lock: "simple", Verdict: "invalid", Expected: true},
		{Scenario: "gc-pause", Lock: "fenced", Verdict: "invalid", Label: "invalid 2/3", Expected: false},
	}
	if err := PlotMatrix(cells, filepath.Join(dir, "matrix")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "matrix.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "! invalid 2/3") {
		t.Error("matrix.svg does not show the disagreeing cell's rate \"! invalid 2/3\"")
	}
}
