package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// clockLines feeds a monitorNode whose clock changed as changes say with
// MONITOR lines, each stamped stamp (ms past base) and read at read (ms
// past base), and returns what it recorded: "clock <offset ms>" for a
// marker, "cmd <stamp ms>" for a command.
func clockLines(changes []ClockChange, lines [][2]int64) []string {
	const base = int64(1_800_000_000) * 1e9
	var got []string
	var read int64
	k := &ServerClock{}
	changes = append([]ClockChange(nil), changes...)
	for i := range changes {
		changes[i].At += base
	}
	k.changes = append(k.changes, ClockChange{At: base - int64(time.Hour), Rate: 1})
	m := &monitorNode{node: "n1", prefix: "p:", clock: k, names: map[string]string{},
		now: func() int64 { return 0 }, toRun: func(t time.Time) int64 { return t.UnixNano() - base },
		wall: func() int64 { return base + read*1e6 },
		record: func(e *history.Event) {
			if e.Detail == history.CmdClock {
				got = append(got, fmt.Sprintf("clock %d", e.Value/1e6))
				return
			}
			got = append(got, fmt.Sprintf("cmd %d", e.T/1e6))
		}}
	m.startClock()
	k.changes = append(k.changes, changes...)
	for _, l := range lines {
		s := base + l[0]*1e6
		read = l[1]
		m.line(fmt.Sprintf("+%d.%06d [0 127.0.0.1:5] \"SET\" \"p:k\" \"v\"", s/1e9, s%1e9/1e3))
	}
	return got
}

// The record marks a clock change in the node's order: before the first
// command run under it, found by a stamp that steps back (a jump back), a
// stamp past the change (a jump forward), or, after a jump back while the
// node was idle longer than the jump, by when the line was read; a command
// that ran before the change and was read after it stays before.
func TestPlaceClock(t *testing.T) {
	back := []ClockChange{{At: 500e6, Offset: -600e6, Rate: 1}}
	fwd := []ClockChange{{At: 500e6, Offset: 600e6, Rate: 1}}
	for _, tc := range []struct {
		name    string
		changes []ClockChange
		lines   [][2]int64 // stamp, read (ms)
		want    string
	}{
		{"back, busy", back, [][2]int64{{480, 481}, {495, 510}, {-90, 511}, {-80, 521}},
			"[cmd 480 cmd 495 clock -600 cmd -90 cmd -80]"},
		{"back, a step", back, [][2]int64{{100, 101}, {-100, 501}},
			"[cmd 100 clock -600 cmd -100]"},
		// Idle from 100 to 750 ms: the stamp (150) does not step back
		// and fits the old setting too (at 150 ms), but the line was
		// read at 751.
		{"back, idle longer than the jump", back, [][2]int64{{100, 101}, {150, 751}},
			"[cmd 100 clock -600 cmd 150]"},
		{"back, read after the change", back, [][2]int64{{100, 101}, {490, 505}},
			"[cmd 100 cmd 490]"},
		{"forward", fwd, [][2]int64{{480, 481}, {495, 520}, {1110, 511}},
			"[cmd 480 cmd 495 clock 600 cmd 1110]"},
		{"no change", nil, [][2]int64{{480, 481}, {495, 520}},
			"[cmd 480 cmd 495]"},
	} {
		if got := fmt.Sprint(clockLines(tc.changes, tc.lines)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
