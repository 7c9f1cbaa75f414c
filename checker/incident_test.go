package checker

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// pauseIncident adds, from t0 (ms), client 0 taking k, reading, then being
// paused for 300 ms (3×TTL) before its write, while clients 1 and 2 cycle
// through k every 10 ms: every cycle overlaps client 0's belief (one mutex
// pair each) and client 0's write, based on its read before the pause,
// overwrites the last cycle's update (one lost write). It returns the
// number of cycles. With fault, the pause is recorded as a pause-client
// fault aimed at client 0, as the runner does.
func pauseIncident(b *hb, t0 int64, fault int) int {
	b.acq(0, t0, t0+1, t0+101, history.OK, 1).read(0, t0+2, 0)
	b.add(history.Event{T: (t0 + 3) * ms, End: (t0 + 303) * ms, Client: 0, Key: "k", Op: history.OpPause, Detail: "before-write"})
	if fault > 0 {
		b.add(history.Event{T: (t0 + 3) * ms, End: (t0 + 303) * ms, Client: -1, Op: history.OpFault,
			Fault: &history.Fault{ID: fault, Kind: "pause-client", Target: "client 0", Applied: true}})
	}
	n := 0
	for t := t0 + 110; t < t0+300; t += 10 {
		b.cycle(1+n%2, t, int64(n+1))
		n++
	}
	b.write(0, t0+303, t0+304, 1, 0, true).rel(0, t0+305, t0+306, 0)
	if fault > 0 {
		b.add(history.Event{T: (t0 + 304) * ms, End: (t0 + 304) * ms, Client: -1, Op: history.OpHeal,
			Fault: &history.Fault{ID: fault, Kind: "pause-client", Applied: true}})
	}
	return n
}

// wantPartition checks that the incidents cover every violation exactly
// once and that their counts add up to the violations listed.
func wantPartition(t *testing.T, r *Result) {
	t.Helper()
	seen := map[int]int{}
	for _, in := range r.Incidents {
		total := 0
		for _, n := range in.Counts {
			total += n
		}
		if total != len(in.Violations) {
			t.Errorf("incident %d: counts %v add up to %d, it lists %d violations", in.ID, in.Counts, total, len(in.Violations))
		}
		for _, i := range in.Violations {
			seen[i]++
			if v := r.Violations[i]; v.Cause != in.Cause {
				t.Errorf("incident %d (%s) contains violation %d of cause %s", in.ID, in.Cause, i, v.Cause)
			}
		}
	}
	for i := range r.Violations {
		if seen[i] != 1 {
			t.Errorf("violation %d is in %d incidents, want 1", i, seen[i])
		}
	}
}

func TestOnePauseIsOneIncident(t *testing.T) {
	for _, fault := range []int{0, 1} {
		b := newHB(nil)
		b.cycle(1, 0, 0) // unrelated history before
		n := pauseIncident(b, 20, fault)
		r := Check(b.ev, Options{})
		wantVerdicts(t, r, map[string]Verdict{CheckMutex: Invalid, CheckResource: Invalid})
		wantPartition(t, r)
		if len(r.Incidents) != 1 {
			t.Fatalf("fault %d: %d incidents, want 1: %+v", fault, len(r.Incidents), r.Incidents)
		}
		in := r.Incidents[0]
		if in.Counts[CheckMutex] != n || in.Counts[CheckResource] != 1 || r.Checks[CheckMutex].Violations != n {
			t.Errorf("fault %d: counts %v (mutex check %d), want %d mutex pairs and 1 lost write", fault, in.Counts, r.Checks[CheckMutex].Violations, n)
		}
		if in.ID != 1 || in.Cause != CausePause || in.FaultID != fault || in.Lease == nil || in.Lease.Client != 0 {
			t.Errorf("fault %d: incident %+v: want id 1, cause %s, fault %d, lease of client 0", fault, in, CausePause, fault)
		}
		if len(in.Clients) != 3 || len(in.Keys) != 1 || in.Keys[0] != "k" {
			t.Errorf("fault %d: clients %v keys %v, want 0,1,2 on k", fault, in.Clients, in.Keys)
		}
		// The span covers the pause and every violation's window.
		if in.Span[0] > 23*ms || in.Span[1] < 323*ms {
			t.Errorf("fault %d: span %v, want it to cover the pause [23, 323] ms", fault, in.Span)
		}
		for _, want := range []string{"client 0 was paused 0.30 s (3.0×TTL) at before-write", "2 clients (1, 2) acquired k", "on resuming it wrote over client"} {
			if !strings.Contains(in.Sentence, want) {
				t.Errorf("fault %d: sentence %q lacks %q", fault, in.Sentence, want)
			}
		}
	}
}

func TestTwoPausesAreTwoIncidents(t *testing.T) {
	for _, fault := range []int{0, 1} {
		b := newHB(nil)
		n1 := pauseIncident(b, 0, fault)
		f2 := fault
		if fault > 0 {
			f2 = 2
		}
		n2 := pauseIncident(b, 1000, f2)
		r := Check(b.ev, Options{})
		wantPartition(t, r)
		if len(r.Incidents) != 2 {
			t.Fatalf("fault %d: %d incidents, want 2: %+v", fault, len(r.Incidents), r.Incidents)
		}
		for i, n := range []int{n1, n2} {
			in := r.Incidents[i]
			if in.ID != i+1 || in.Counts[CheckMutex] != n || in.Counts[CheckResource] != 1 {
				t.Errorf("fault %d: incident %d: id %d counts %v, want %d mutex pairs, 1 lost write", fault, i, in.ID, in.Counts, n)
			}
		}
		if r.Incidents[0].Span[1] >= r.Incidents[1].Span[0] {
			t.Errorf("spans %v and %v overlap or are out of order", r.Incidents[0].Span, r.Incidents[1].Span)
		}
	}
}

func TestNonOwnerDeleteIsAnIncidentWithoutFault(t *testing.T) {
	b := newHB(nil)
	b.acq(0, 0, 1, 101, history.OK, 1).srv(1, "set").read(0, 2, 0).write(0, 3, 4, 1, 0, true)
	b.srv(101, "expired")
	b.acq(1, 90, 110, 210, history.OK, 1).srv(109, "set").read(1, 111, 1)
	b.rel(0, 150, 151, 0).srv(150, "del") // client 0's DEL removes client 1's key
	b.acq(2, 140, 155, 255, history.OK, 1).srv(154, "set")
	b.write(1, 170, 171, 2, 0, true).rel(1, 172, 173, 0)
	b.read(2, 174, 2).write(2, 175, 176, 3, 0, true).rel(2, 177, 178, 0).srv(177, "del")
	r := Check(b.ev, Options{})
	wantPartition(t, r)
	var in *Incident
	for i := range r.Incidents {
		if r.Incidents[i].Counts[CheckUnlock] > 0 {
			in = &r.Incidents[i]
		}
	}
	if in == nil {
		t.Fatalf("no incident contains the unlock violation: %+v", r.Incidents)
	}
	if in.Cause != CauseNonOwnerDel || in.FaultID != 0 || in.Lease == nil || in.Lease.Client != 1 {
		t.Errorf("incident %+v: want cause %s, no fault, client 1's lease", in, CauseNonOwnerDel)
	}
	// The unlock and the acquire it let in are one incident.
	if in.Counts[CheckMutex] != r.Checks[CheckMutex].Violations || in.Counts[CheckMutex] == 0 {
		t.Errorf("incident counts %v, mutex check %d: want the mutex pair in the same incident", in.Counts, r.Checks[CheckMutex].Violations)
	}
	if !strings.Contains(in.Sentence, "client 0's release deleted client 1's key k at 0.150 s") || strings.Contains(in.Sentence, "unlock violation") {
		t.Errorf("sentence %q does not name the deletion", in.Sentence)
	}
}

func TestNoViolationNoIncident(t *testing.T) {
	b := newHB(nil)
	for i := int64(0); i < 5; i++ {
		b.cycle(int(i%2), i*10, i+1)
	}
	r := Check(b.ev, Options{})
	if r.Incidents == nil || len(r.Incidents) != 0 {
		t.Errorf("incidents %#v, want an empty list", r.Incidents)
	}
}
