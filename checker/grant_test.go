package checker

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// An acquire the lock returned as held although the node had not granted
// it (unknown-acquire-held under a frozen node or a cut link): client 0
// holds k from 1 ms; client 1's acquire returns ok at 50 ms. Its SET either
// ran only after that (queued on the frozen node), or ran and found client
// 0's key. When the record shows it taking the key (client 0's key gone),
// the cause is not this one.
func TestAcquireNotGranted(t *testing.T) {
	run := func(how string) *Result {
		b := recordHB()
		b.add(history.Event{T: 5 * ms, End: 6 * ms, Client: -1, Node: "n1", Op: history.OpFault,
			Fault: &history.Fault{ID: 1, Kind: history.FaultPauseNode, Target: "node n1", Request: map[string]string{"duration": "70ms"}, Applied: true}})
		b.acqTok(0, 0, 1, 101, "tokA", 0, 1).cmd(0, 1, []string{"SET", recKey, "tokA", "NX", "PX", "100"})
		b.acqTok(1, 2, 50, 150, "tokB", 0, 1)
		switch how {
		case "late":
			b.cmd(1, 80, []string{"SET", recKey, "tokB", "NX", "PX", "100"})
		case "refused":
			b.cmd(1, 30, []string{"SET", recKey, "tokB", "NX", "PX", "100"})
		case "granted":
			b.cmd(0, 20, []string{"DEL", recKey}).cmd(1, 30, []string{"SET", recKey, "tokB", "NX", "PX", "100"})
		}
		b.add(history.Event{T: 75 * ms, End: 76 * ms, Client: -1, Op: history.OpHeal, Fault: &history.Fault{ID: 1, Kind: history.FaultPauseNode, Applied: true}})
		b.rel(0, 90, 91, 0).rel(1, 95, 96, 0)
		streamedSame(t, b)
		return Check(b.ev, Options{})
	}
	for how, want := range map[string]string{
		"late":    "client 1's acquire of k (0.002 s–0.050 s) returned as held, but the node had not granted it: no write with its token ran on any node by then, per the command record (node n1 was frozen from 0.005 s: fault 1)",
		"refused": "its SET on n1 at 0.030 s found the key held by client 0 and did not take it",
	} {
		r := run(how)
		wantOwnCause(t, r, CheckMutex, CauseNotGranted, want)
		for _, in := range r.Incidents {
			if in.Cause == CauseNotGranted && in.FaultID != 1 {
				t.Errorf("%s: incident names fault %d, want the pause (1): %+v", how, in.FaultID, in)
			}
		}
	}
	for _, v := range run("granted").Violations {
		if v.Cause == CauseNotGranted {
			t.Errorf("the record shows client 1's SET taking the key, yet: %s", v.Explanation)
		}
	}
	// Without the record nothing shows it.
	b := recordHB()
	b.acqTok(0, 0, 1, 101, "tokA", 0, 1).acqTok(1, 2, 50, 150, "tokB", 0, 1).rel(0, 90, 91, 0).rel(1, 95, 96, 0)
	for _, v := range Check(b.ev, Options{NoCommandRecord: true}).Violations {
		if v.Cause == CauseNotGranted || strings.Contains(v.Explanation, "not granted") {
			t.Errorf("no record, yet: %s", v.Explanation)
		}
	}
}

// The only node frozen for 2×TTL right after client 0 acquired: the server
// expires its key as the node resumes, and client 1 acquires; client 0
// (a lock promising no deadline) still believes. The server's notification
// may come on the library's own key ("rueidislock:0:{k}", rueidislock,
// which declares it: OpKeys). An expiry long after the resume is not the
// freeze's.
func TestExpiredDuringNodePause(t *testing.T) {
	run := func(key string, expiredAt int64) *Result {
		b := newHB(nil)
		if key != "k" {
			b.keys(0, 0, key).keys(1, 0, key)
		}
		b.add(history.Event{T: 1 * ms, Client: -1, Key: key, Op: history.OpServer, Node: "n1", Detail: "set"})
		b.acq(0, 0, 2, 0, history.OK, 1)
		b.add(history.Event{T: 3 * ms, End: 4 * ms, Client: -1, Node: "n1", Op: history.OpFault,
			Fault: &history.Fault{ID: 1, Kind: history.FaultPauseNode, Target: "node n1", Request: map[string]string{"duration": "200ms"}, Applied: true}})
		b.add(history.Event{T: 203 * ms, End: 204 * ms, Client: -1, Op: history.OpHeal, Fault: &history.Fault{ID: 1, Kind: history.FaultPauseNode, Applied: true}})
		b.add(history.Event{T: expiredAt * ms, Client: -1, Key: key, Op: history.OpServer, Node: "n1", Detail: "expired"})
		b.acq(1, 100, expiredAt+2, 0, history.OK, 1)
		b.rel(0, expiredAt+50, expiredAt+51, 0).rel(1, expiredAt+60, expiredAt+61, 0)
		return Check(b.ev, Options{})
	}
	for _, key := range []string{"k", "rueidislock:0:{k}"} {
		r := run(key, 205)
		for _, v := range causesOf(t, r, CheckMutex) {
			if want := "node n1 was frozen from 0.003 s to 0.203 s (2.0×TTL) while client 0 held k (acquired 0.002 s); the server expired the key at 0.205 s, as the node resumed, and client 1 acquired it at 0.207 s"; v.Cause != CausePause || !strings.Contains(v.Explanation, want) {
				t.Errorf("%s: cause %s, %q; want %s saying %q", key, v.Cause, v.Explanation, CausePause, want)
			}
		}
		if in := r.Incidents[0]; in.FaultID != 1 || !strings.Contains(in.Sentence, "node n1 was frozen 0.20 s from 0.003 s while client 0 held k") {
			t.Errorf("%s: incident %+v", key, in)
		}
	}
	for _, v := range run("k", 600).Violations {
		if v.Cause == CausePause {
			t.Errorf("an expiry 0.4 s after the resume, yet: %s", v.Explanation)
		}
	}
}

// Every client cut from the only node (partition, requests lost) right
// after client 0 acquired: its key expires in the cut, and client 1
// acquires when it heals while client 0 still believes (renew-timeout-ack:
// its timed-out renewals count as acknowledged). With replies lost only
// (from-node) the renewals still reach the node: not this cause.
func TestHolderPartitionedByNodeCut(t *testing.T) {
	run := func(dir string) *Result {
		b := newHB(nil)
		b.srv(1, "set").acq(0, 0, 2, 0, history.OK, 1)
		b.add(history.Event{T: 3 * ms, End: 4 * ms, Client: -1, Node: "n1", Op: history.OpFault,
			Fault: &history.Fault{ID: 1, Kind: history.FaultPartition, Target: "node n1", Request: map[string]string{"duration": "200ms", history.ParamDirection: dir, "mode": "drop"}, Applied: true}})
		b.srv(101, "expired")
		b.add(history.Event{T: 203 * ms, End: 204 * ms, Client: -1, Op: history.OpHeal, Fault: &history.Fault{ID: 1, Kind: history.FaultPartition, Applied: true}})
		b.acq(1, 100, 207, 0, history.OK, 1)
		b.rel(0, 250, 251, 0).rel(1, 260, 261, 0)
		return Check(b.ev, Options{})
	}
	r := run("both")
	for _, v := range causesOf(t, r, CheckMutex) {
		if want := "every client was cut off from node n1 from 0.003 s to 0.203 s (partition, both) and client 0's key expired at 0.101 s while it still held it"; v.Cause != CausePartitioned || !strings.Contains(v.Explanation, want) {
			t.Errorf("cause %s, %q; want %s saying %q", v.Cause, v.Explanation, CausePartitioned, want)
		}
	}
	if in := r.Incidents[0]; in.FaultID != 1 || in.Cause != CausePartitioned {
		t.Errorf("incident %+v", in)
	}
	for _, v := range causesOf(t, run("from-node"), CheckMutex) {
		if v.Cause == CausePartitioned {
			t.Errorf("replies lost only, yet: %s", v.Explanation)
		}
	}
}
