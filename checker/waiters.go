package checker

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// blockedSpan is a span in which a client could not act for itself: its
// commands were stalled or cut, or it was paused. why says so in a
// sentence's words.
type blockedSpan struct {
	span
	why string
}

// waiterBlocks are, per client, the spans in which a fault kept it from
// acting, from the history's faults and pauses, and their union (sorted,
// disjoint) to subtract from its waits: a wait that the waiter's own fault
// made long is not the lock's to answer for (liveness).
type waiterBlocks struct {
	spans  map[int32][]span
	labels map[int32][]blockedSpan
}

// blocks collects every client's blocked spans:
//   - its pauses (pause-client, a stopped process, a blocked event loop);
//   - a cut of its links (cut-client), from the fault to its heal;
//   - a stall of its commands (stall-commands) that measurably delayed a
//     command of one of its acquires, from the fault to its heal plus the
//     delay (a command sent just before the heal waits that long). A stall
//     whose heal says it delayed none of the client's acquire commands (a
//     stall of SET on a lock that acquires with a script) kept nothing from
//     it; one whose heal is not recorded, or which met a driver process's
//     commands on the wire uncounted, is taken to have.
func (m *model) blocks() waiterBlocks {
	b := waiterBlocks{spans: map[int32][]span{}, labels: map[int32][]blockedSpan{}}
	add := func(c int32, s span, why string) {
		if s.b <= s.a {
			return
		}
		b.spans[c] = append(b.spans[c], s)
		b.labels[c] = append(b.labels[c], blockedSpan{s, why})
	}
	for id, cs := range m.clients {
		for _, p := range cs.pauses {
			add(id, span{p.t, p.end}, fmt.Sprintf("client %d was paused %s–%s", id, sec(p.t), sec(p.end)))
		}
	}
	for _, f := range m.faults {
		if !f.applied || f.clientTarget < 0 {
			continue
		}
		c := int32(f.clientTarget)
		heal := max(f.healT, f.end)
		switch f.kind {
		case history.FaultCutClient:
			add(c, span{f.t, heal}, fmt.Sprintf("client %d's links were cut %s–%s (fault %d)", c, sec(f.t), sec(heal), f.id))
		case history.FaultStallCommands:
			if !stallTouchedAcquires(f) {
				continue
			}
			d, _ := time.ParseDuration(f.v.Delay)
			cmds := f.v.Delay + " each"
			if n := f.healEff[history.EffectStalledInAcquire]; n != "" {
				cmds = f.v.Delay + " on " + n + " of its acquire commands"
			}
			add(c, span{f.t, heal + int64(d)}, fmt.Sprintf("client %d's commands were stalled %s–%s (fault %d, %s)", c, sec(f.t), sec(heal+int64(d)), f.id, cmds))
		}
	}
	for c, ss := range b.spans {
		b.spans[c] = union(ss)
	}
	return b
}

// stallTouchedAcquires: the stall-commands firing f delayed a command of
// one of its client's acquires, or may have (its heal not recorded, or
// its effect met on the wire, uncounted).
func stallTouchedAcquires(f *fault) bool {
	if !f.healRecorded || f.healEff == nil || f.healEff[history.EffectStalledOnWire] == "true" {
		return true
	}
	n, err := strconv.Atoi(f.healEff[history.EffectStalledInAcquire])
	return err != nil || n > 0
}

// own is s less client c's blocked spans, appended to out.
func (b waiterBlocks) own(out []span, c int32, s span) []span {
	return minusInto(out, []span{s}, b.spans[c])
}

// why names the blocked spans of clients that overlap [x, y), for a
// sentence: at most three, then how many more.
func (b waiterBlocks) why(clients map[int32]bool, x, y int64) string {
	var ws []string
	n := 0
	for c := range clients {
		for _, l := range b.labels[c] {
			if l.a < y && l.b > x {
				n++
				if len(ws) < 3 {
					ws = append(ws, l.why)
				}
			}
		}
	}
	sort.Strings(ws)
	if n > len(ws) {
		ws = append(ws, fmt.Sprintf("%d more", n-len(ws)))
	}
	return strings.Join(ws, "; ")
}

// keyAtEnd is what the servers' record shows of key k at the end of
// [x, y): present (written and not freed since) or free, and since when
// (the last write or free before y; since < x: from before the span).
// known false: the record holds nothing of k before y.
func (m *model) keyAtEnd(kd *keyData, y int64) (present bool, since int64, known bool) {
	i := sort.Search(len(kd.srv), func(i int) bool { return kd.srv[i].t >= y })
	for j := i - 1; j >= 0; j-- {
		switch e := kd.srv[j]; e.kind {
		case srvSet:
			return true, e.t, true
		case srvDel, srvExpired:
			return false, e.t, true
		}
	}
	return false, 0, false
}
