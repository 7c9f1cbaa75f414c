package explore

import "testing"

// A margin's words name its unit and direction: ×TTL, a falling rate (a
// slow clock, "≤"), a rising one ("≥"), and never with the range searched.
func TestMarginTextUnits(t *testing.T) {
	for _, c := range []struct {
		m    Margin
		want string
	}{
		{Margin{Template: "pause-client@before-write", Unit: UnitTTL, Lock: 1.05, Ref: Never, Range: [2]float64{MinMag, MaxMag}},
			"pause-client@before-write: simple fails from 1.05×TTL, fenced never (≤3×TTL)"},
		{Margin{Template: "clock-skew-rate(slow)", Unit: UnitRate, Falling: true, Lock: 0.71, Ref: Never, Range: [2]float64{0.1, 0.95}},
			"clock-skew-rate(slow): simple fails at rate ≤0.71, fenced never (rate ≥0.1)"},
		{Margin{Template: "clock-drift(fast)", Unit: UnitRate, Lock: 1.26, Ref: 1.05, Range: [2]float64{1.05, 3}},
			"clock-drift(fast): simple fails at rate ≥1.26, fenced from rate 1.05 (the mildest searched)"},
		{Margin{Template: "old", Lock: Never, Ref: 0.1}, // margins.json written before units
			"old: simple fails never (≤3×TTL), fenced from ≤0.1×TTL"},
	} {
		if got := c.m.Text("simple", "fenced"); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
