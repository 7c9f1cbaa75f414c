package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/lockchaos/lockchaos/history"
)

// Loss detection: how long a holder went on believing it held a key after
// the server had lost it. A loss is the server no longer holding the
// holder's key while the holder believes it does: the key expired, another
// client's call deleted or overwrote it (the observer's record), or the
// node restarted without it (the fault record). The holder stops believing
// when its lock tells it (Lost), when its deadline passes, or when it
// releases; the time from the loss to that moment is the detection
// latency. A correct watchdog's is bounded by its renew interval; a lock
// that never tells its holder only stops when the hold ends (released: it
// never learned) or never (the run ended while it believed: unbounded).
//
// Measured on single-master topologies (single, sentinel), where one
// server's record is the lock's state; on independent masters a node's
// loss is not the lock's (Redlock keeps a quorum).

// LossDetection summarises the losses of a run.
type LossDetection struct {
	// Losses counts holds whose key the server lost while they believed.
	Losses int `json:"losses"`
	// Learned: the lock told the holder (Lost) or its deadline ended the
	// belief; Released: the holder released without having learned;
	// Unbounded: still believing when the record ends.
	Learned   int `json:"learned"`
	Released  int `json:"released"`
	Unbounded int `json:"unbounded"`
	// Latencies over learned and released holds, in ms.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
	// Worst names the hold with the longest latency, for a person.
	Worst string `json:"worst,omitempty"`
}

// noteLoss records that the server lost hold o's key at t; the earliest
// loss of a hold counts. On independent masters one node's loss is not the
// lock's: only recordLoss's majority count is (noteLossAt).
func (m *model) noteLoss(o int32, t int64, how string, seen bool) {
	if m.topo == "independent" {
		return
	}
	m.noteLossAt(o, t, how, seen)
}

// noteLossAt is noteLoss on any topology.
func (m *model) noteLossAt(o int32, t int64, how string, seen bool) {
	h := &m.holds[o]
	if h.lossHow != 0 && t >= h.lossT {
		return
	}
	i, ok := m.lossHowIdx[how]
	if !ok {
		m.lossHows = append(m.lossHows, how)
		i = int32(len(m.lossHows))
		if m.lossHowIdx == nil {
			m.lossHowIdx = map[string]int32{}
		}
		m.lossHowIdx[how] = i
	}
	h.lossT, h.lossHow, h.lossSeen = t, i, seen
}

// lossAcc accumulates loss detection over the holds summarised so far.
type lossAcc struct {
	ld    LossDetection
	lat   []float64
	worst float64
}

// measuresLoss: loss detection is measured on single-master topologies with
// an observer or a command record; with a command record also on a Redis
// Cluster (a key lives on one shard) and on independent masters (a majority
// of nodes must hold it).
func (m *model) measuresLoss() bool {
	switch m.topo {
	case "single", "sentinel":
		return m.observerOK || m.useRecord()
	case "cluster", "independent":
		return m.useRecord()
	}
	return false
}

// summarizeLoss folds hold h, whose belief is final, into the loss
// detection summary: first the losses the observer cannot see (faultLoss),
// then the latency from the earliest loss to the end of its belief.
func (m *model) summarizeLoss(hi int32, a *lossAcc) {
	if !m.measuresLoss() {
		return
	}
	m.faultLoss(hi)
	if m.useRecord() {
		m.recordLoss(hi)
	}
	h := &m.holds[hi]
	if h.lossHow == 0 {
		return
	}
	if h.empty || h.lossT >= h.belief || (h.lossSeen && h.lossT <= h.start+m.lag) {
		// It no longer believed: nothing to detect. Or the loss was
		// seen within the observer's lag of the ack: the notification
		// may be of the previous owner's key.
		return
	}
	ld := &a.ld
	ld.Losses++
	end := h.belief
	if h.told > 0 && h.told < end {
		end = max(h.told, h.lossT)
	}
	d := history.MS(end - h.lossT)
	switch {
	case h.told == 0 && h.how == endOpen && h.belief >= h.heldTo && m.openAtEnd(h):
		ld.Unbounded++
		return
	case h.told > 0 || h.how == endLost || h.belief < h.heldTo:
		ld.Learned++
	default:
		ld.Released++
	}
	a.lat = append(a.lat, d)
	if len(a.lat) == 1 || d > a.worst {
		a.worst = d
		ld.Worst = fmt.Sprintf("client %d's key %s was %s at %s; it believed it held it until %s (%.0f ms)",
			h.client, m.keys[h.key], m.lossHows[h.lossHow-1], sec(h.lossT), sec(end), d)
	}
}

// lossDetection computes the summary, or nil where it is not measured.
func (m *model) lossDetection(a *lossAcc) *LossDetection {
	if !m.measuresLoss() {
		return nil
	}
	ld := a.ld
	if ld.Losses == 0 {
		return &ld
	}
	lat := slices.Clone(a.lat)
	sort.Float64s(lat)
	if n := len(lat); n > 0 {
		ld.P50MS, ld.P99MS, ld.MaxMS = quantile(lat, 0.50), quantile(lat, 0.99), lat[n-1]
	}
	return &ld
}

// openAtEnd: a hold with no release or loss recorded that was still open
// when the record ended (not a crashed client, whose belief ends with it).
func (m *model) openAtEnd(h *hold) bool {
	for _, f := range m.faults {
		if endsClient(f.kind) && f.clientTarget == int(h.client) && f.applied {
			return false
		}
	}
	return true
}

// faultLoss adds the losses the observer cannot see: a node restarted
// empty (or killed and restarted after a while) drops its keys without a
// notification. A hold believing at that moment on that node (the master)
// lost its key then. (On independent masters, one node is not the lock:
// recordLoss counts the others.)
func (m *model) faultLoss(hi int32) {
	if m.topo == "independent" {
		return
	}
	h := &m.holds[hi]
	for _, f := range m.faults {
		if !f.applied || (f.kind != history.FaultRestartNode && f.kind != history.FaultKillNode) || f.v.Mode == "aof" {
			continue
		}
		if h.start < f.t && f.t < h.belief && !h.empty && (f.node == "" || m.masterAtName(f.node, f.t)) {
			m.noteLoss(hi, f.t, "lost when "+targetName(f)+" restarted empty", false)
		}
	}
}

// masterAtName is masterAt for a node name.
func (m *model) masterAtName(name string, t int64) bool {
	for i, n := range m.nodes {
		if n == name {
			return m.masterAt(int16(i), t)
		}
	}
	return false
}

// quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
