package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// The key mapping: many libraries write a key of their own rather than the
// one they are given (a prefix, "lock.<key>", "rueidislock:0:{k0}"). The
// servers' record (commands, notifications) of such a key is the lock key's:
// the checks read it as such, or a late DEL of the library's key would
// delete the next holder's lock unseen. The mapping comes from the lock
// (history.OpKeys: a driver's `keys` in `acquired`, a built-in adapter's
// lockimpl.KeyMapper) or, where it says nothing, from the command record:
// a key that no client acquires, written by a client's own connection
// during its acquire of a key it did not write itself, is that key's
// (learnKeys). A mapped key's record joins the lock key's (keyIdx points
// the library's name at the lock key).

// keyMap is what the model knows of the mapping.
type keyMap struct {
	// pending: each client's acquires that returned ok and may yet teach
	// a key (learnKeys), oldest first.
	pending map[int32][]learnWin
	// names: the library's names of each lock key, by how they were
	// found ("reported" or "learned"), for the result's notes.
	names map[string][]string
	// ambiguous counts acquires that wrote more than one key of their
	// own (nothing learned from them).
	ambiguous int
}

// learnWin is one acquire a key may be learned from: client's acquire of
// key k over [t, end] (harness time).
type learnWin struct {
	k      int32
	t, end int64
}

// learnSlack: a command's harness time may fall this far outside its
// acquire's span (the record's stamps are the server's, mapped).
const learnSlack = int64(2e6)

// addKeys reads an OpKeys event: the lock wrote e.Detail for e.Key.
func (m *model) addKeys(e *history.Event) {
	short, ok := m.shortKey(e.Detail)
	if !ok || e.Key == "" {
		return
	}
	m.mapKey(short, e.Key, "reported")
}

// learnFrom remembers an ok acquire for learnKeys, when there is a record
// to learn from.
func (m *model) learnFrom(e *history.Event, k int32) {
	if !m.cmdOn || e.Client < 0 {
		return
	}
	if m.keyMap.pending == nil {
		m.keyMap.pending = map[int32][]learnWin{}
	}
	c := int32(e.Client)
	m.keyMap.pending[c] = append(m.keyMap.pending[c], learnWin{k: k, t: e.T, end: max(e.T, e.End)})
}

// mapKey makes name (a server key's short name) an alias of lock key to:
// what was recorded of name so far joins to's record, and what comes later
// goes there. A key a client acquires is never an alias.
func (m *model) mapKey(name, to, how string) {
	if name == to {
		return
	}
	ti := m.key(to)
	j, ok := m.keyIdx[name]
	if ok && (j == ti || m.kd[j].named || len(m.kd[j].holds) > 0) {
		return
	}
	if ok {
		m.mergeKey(j, ti)
	}
	m.keyIdx[name] = ti
	m.observer.lastIdx = -1
	if m.keyMap.names == nil {
		m.keyMap.names = map[string][]string{}
	}
	m.keyMap.names[to] = append(m.keyMap.names[to], how+" "+name)
}

// mergeKey moves key j's record into key t's, and leaves j empty.
func (m *model) mergeKey(j, t int32) {
	a, b := m.kd[j], m.kd[t]
	if a.walked > 0 || a.cmdWalked > 0 {
		m.setInexact(fmt.Sprintf("%s was found to be %s's after its record was judged", m.keys[j], m.keys[t]))
	}
	if n := b.walked; n > 0 && len(a.srv) > 0 && a.srv[0].t < b.srv[n-1].t {
		m.setInexact(fmt.Sprintf("%s's notifications joined %s's after those times were judged", m.keys[j], m.keys[t]))
	}
	b.srv = append(b.srv, a.srv[a.walked:]...)
	b.cmds = append(b.cmds, a.cmds[a.cmdWalked:]...)
	b.ownIncrs = append(b.ownIncrs, a.ownIncrs...)
	b.seen = b.seen || a.seen
	b.cutSrv, b.cutCmd = max(b.cutSrv, a.cutSrv), max(b.cutCmd, a.cutCmd)
	m.kd[j] = &keyData{cutHold: math.MinInt64, cutSrv: math.MinInt64, cutUnanswered: math.MinInt64, cutCmd: math.MinInt64,
		droppedHeldTo: math.MinInt64}
}

// isWrite: the command made or changed the key (a lock's acquire writes
// its key: SET, HSET, PEXPIRE, RESTORE).
func isWrite(op uint8) bool {
	return op == cmdSet || op == cmdHash || op == cmdExpire || op == cmdRestore
}

// learnKeys learns the mapping from the command record: for each acquire
// that returned ok and wrote none of its own key, the keys no client
// acquires that its client's connection wrote during it. One such key is
// the lock key's; an acquire that wrote several teaches nothing (a lock of
// several keys: which one is the lock's cannot be told). Run before each
// window's replay, on what is not replayed yet.
func (m *model) learnKeys() {
	km := &m.keyMap
	if len(km.pending) == 0 || !m.useRecord() {
		return
	}
	// Each stray key's unreplayed writes by a named connection, by
	// client, in time order.
	type write struct {
		k int32
		h int64
	}
	ws := map[int32][]write{}
	for k, kd := range m.kd {
		if kd.named || len(kd.holds) > 0 {
			continue
		}
		if i, ok := m.keyIdx[m.keys[k]]; ok && i != int32(k) {
			continue // an alias: its record went to the lock key
		}
		for _, c := range kd.cmds[min(kd.learnAt, kd.cmdWalked):] {
			if c.client >= 0 && isWrite(c.op) {
				ws[c.client] = append(ws[c.client], write{int32(k), c.h})
			}
		}
		kd.learnAt = len(kd.cmds)
	}
	clients := make([]int32, 0, len(km.pending))
	for c := range km.pending {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	for _, c := range clients {
		cw := ws[c]
		sort.SliceStable(cw, func(i, j int) bool { return cw[i].h < cw[j].h })
		keep := km.pending[c][:0]
		for _, w := range km.pending[c] {
			var found []int32
			i := sort.Search(len(cw), func(i int) bool { return cw[i].h >= w.t-learnSlack })
			for ; i < len(cw) && cw[i].h <= w.end+learnSlack; i++ {
				if !slices.Contains(found, cw[i].k) {
					found = append(found, cw[i].k)
				}
			}
			switch {
			case len(found) == 0:
				// Its commands may not have come yet; once the replay
				// has passed it, nothing more will.
				if w.end+learnSlack >= m.cmdJudged {
					keep = append(keep, w)
				}
			case m.wroteOwn(w, c):
			case len(found) == 1:
				m.mapKey(m.keys[found[0]], m.keys[w.k], "learned")
			default:
				km.ambiguous++
			}
		}
		if len(keep) == 0 {
			delete(km.pending, c)
		} else {
			km.pending[c] = keep
		}
	}
}

// wroteOwn reports whether client's connection wrote acquire w's own key
// during it (then the lock names its key as given, and another key it
// writes is something else: a fence counter, a queue).
func (m *model) wroteOwn(w learnWin, client int32) bool {
	// Appended in about the record's order (each node's in its own):
	// searched as sorted, with a TTL's margin either side.
	cmds := m.kd[w.k].cmds
	i := sort.Search(len(cmds), func(i int) bool { return cmds[i].h >= w.t-learnSlack-m.ttl })
	for ; i < len(cmds) && cmds[i].h <= w.end+learnSlack+m.ttl; i++ {
		if c := cmds[i]; c.client == client && isWrite(c.op) && c.h >= w.t-learnSlack && c.h <= w.end+learnSlack {
			return true
		}
	}
	return false
}

// keyMapNotes says what the mapping found, for the result's notes.
func (m *model) keyMapNotes() []string {
	var out []string
	keys := make([]string, 0, len(m.keyMap.names))
	for k := range m.keyMap.names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, fmt.Sprintf("the lock names its own keys: the servers' record of %s is read as %s's", strings.Join(m.keyMap.names[k], ", "), k))
	}
	if n := m.keyMap.ambiguous; n > 0 {
		out = append(out, fmt.Sprintf("%d acquires wrote several keys of their own and none of the key they were given: no key mapping was learned from them (report the lock's keys: `keys` in `acquired`)", n))
	}
	return out
}

// lockKeysSeen reports whether the servers' record (commands or
// notifications) named any key a client acquired, directly or through the
// mapping.
func (m *model) lockKeysSeen() bool {
	for _, kd := range m.kd {
		if kd.named && kd.seen {
			return true
		}
	}
	return false
}
