package metrics

import (
	"math"
	"strconv"
	"strings"
)

// FormatUS formats a latency given in microseconds with a readable unit and
// three significant digits: 850µs, 1.25ms, 2.5s.
func FormatUS(us float64) string {
	switch {
	case us == 0:
		return "0"
	case math.IsNaN(us) || math.IsInf(us, 0):
		return "-"
	case math.Abs(us) < 1000:
		return sig3(us) + "µs"
	case math.Abs(us) < 1e6:
		return sig3(us/1e3) + "ms"
	default:
		return sig3(us/1e6) + "s"
	}
}

// sig3 prints v with three significant digits and no trailing zeros.
func sig3(v float64) string {
	if v == 0 {
		return "0"
	}
	mag := int(math.Floor(math.Log10(math.Abs(v))))
	prec := 2 - mag
	if prec < 0 {
		prec = 0
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
