package workloads

import (
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// CallerOf ties a command of a shared process's connection to the one
// client of that process with a call in flight at its time (a delete: a
// release), and to nobody when no call or several could have sent it.
func TestCallerOfTiesACommandToTheOneClientInACall(t *testing.T) {
	w := &Workload{tasks: 2, runID: "r1", byID: map[int]*Client{}}
	for id := 0; id < 4; id++ {
		w.byID[id] = &Client{ID: id, calls: &callLog{}}
	}
	ms := func(v float64) int64 { return int64(v * 1e6) }
	// Process 0 (clients 0, 1): client 0 acquires over [10, 20] ms and
	// releases over [50, 51]; client 1 acquires over [15, 60] (a wait).
	w.byID[0].calls.begin(false, ms(10))
	w.byID[0].calls.end(ms(20))
	w.byID[1].calls.begin(false, ms(15))
	w.byID[0].calls.begin(true, ms(50))
	w.byID[0].calls.end(ms(51))
	w.byID[1].calls.end(ms(60))
	// Process 1: client 2 releases over [50, 52], still in flight after.
	w.byID[2].calls.begin(true, ms(50))
	set := &history.Command{Args: []string{"SET", "k", "tok", "NX"}}
	del := &history.Command{Args: []string{"EVAL", "script", "1", "k"}, Inner: [][]string{{"get", "k"}, {"del", "k"}}}
	for _, c := range []struct {
		name string
		at   float64
		cmd  *history.Command
		want int
	}{
		{"lc-r1-p0", 12, set, 0},    // only client 0 is in a call
		{"lc-r1-p0", 17, set, -1},   // clients 0 and 1 both are
		{"lc-r1-p0", 50.5, del, 0},  // a delete: client 0's release, not client 1's acquire
		{"lc-r1-p0", 50.5, set, -1}, // a write: both calls could have sent it
		{"lc-r1-p0", 5, set, -1},    // nobody's call: the library's own
		{"lc-r1-p0", 21.5, set, -1}, // within the slack after client 0's acquire, and in client 1's
		{"lc-r1-p1", 80, del, 2},    // client 2's release, still in flight
		{"lc-r1-p1", 80, set, 2},
		{"lc-r2-p0", 12, set, -1}, // another run's process
		{"lc-r1-c0", 12, set, -1}, // a client's own connection: not CallerOf's
		{"lc-r1-p9", 12, set, -1}, // no such process here
	} {
		if got := w.CallerOf(c.name, ms(c.at), c.cmd); got != c.want {
			t.Errorf("CallerOf(%s, %v ms, %s) = %d, want %d", c.name, c.at, c.cmd.Args[0], got, c.want)
		}
	}
	if (&Workload{tasks: 1, runID: "r1", byID: w.byID}).CallerOf("lc-r1-p0", ms(12), set) != -1 {
		t.Error("a workload whose clients have processes of their own tied a command")
	}
}

// The connection names of shared processes are told from clients' ones.
func TestSharedProcessConn(t *testing.T) {
	for name, want := range map[string]bool{"lc-r1a2-p0": true, "lc-r1a2-p12": true, "lc-r1a2-c3": false, "lc-r1a2-p": false,
		"lc-r1a2-px": false, "lc-monitor": false, "": false, "lc-run-with-p-p3": true} {
		if got := history.SharedProcessConn(name); got != want {
			t.Errorf("SharedProcessConn(%q) = %v, want %v", name, got, want)
		}
	}
}
