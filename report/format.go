package report

import (
	"fmt"
)

// formatRate prints a rate or count with thousands kept readable.
func formatRate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// formatMS prints a time in ms since run start.
func formatMS(ms float64) string {
	if ms >= 10000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f ms", ms)
}
