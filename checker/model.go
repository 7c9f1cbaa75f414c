package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// How a hold's belief ended.
const (
	endOpen     uint8 = iota // no release or loss recorded (crash, run cut short)
	endReleased              // release invoked at depth 0
	endLost                  // the client recorded that it learned the lease was lost
)

// hold is one client's continuous belief that it holds a key, from the ack
// of the acquire that took it at depth 1 to the release that freed it.
type hold struct {
	client   int32
	key      int32
	acqT     int64 // acquire invoke
	start    int64 // acquire ack: belief starts
	deadline int64 // validity promised, extended by renewals; 0 = none
	lastAct  int64 // end of the last resource op / nested acquire in the hold
	actAfter int64 // end of the last write after the deadline (0 none)
	endT     int64 // release invoke or loss time (0 while open)
	how      uint8
	renewBad int32 // refused or unanswered renewals
	told     int64 // when the lock declared the lease lost (OpTold), 0 never
	fence    uint64
	relEnd   int64 // end of the release call that ended it (0 none)
	belief   int64 // computed by prepare: the end of the belief
	heldTo   int64 // computed by prepare: the end ignoring the deadline (release/loss/last act)
	// The server's earliest loss of the key while the hold believed
	// (lossdetect.go); lossHow indexes model.lossHows from 1 (0 = none),
	// so that a hold holds no pointer.
	lossT    int64
	lossHow  int32
	lossSeen bool
	// matched: bit n set when attributeDels matched the hold to a write
	// of its key on node n (nodes from 64 on: model.matchedHi).
	matched uint64
	// empty (computed by prepare): the lease arrived with its deadline
	// already past and the client never acted on it, so it never believed
	// it held the key. Such a hold overlaps nothing; it still counts as the
	// client's key at the server (unlock attribution, liveness).
	empty bool
	// lateDeadline: the deadline the acquire returned with, when it had
	// passed already at the return (0: it had not, or none).
	lateDeadline int64

	// actAfterTold: the end of the last write after told (0 none): the
	// client acted before it looked.
	actAfterTold int64
}

// release is one release call (any depth), for unlock attribution.
type release struct {
	client    int32
	remaining int32 // hold count the client expects after it
	t, end    int64
	refused   bool // the server answered that the client was not the owner: it changed nothing
}

// renew is one renewal call, for unlock attribution.
type renewal struct {
	client int32
	t, end int64
	// unanswered: the outcome is unknown (timeout, broken link): the
	// command may reach the server any time after t.
	unanswered bool
	// own: the client's hold the renewal was made in, once pruning has
	// had to keep it for this renewal (-1 before); keep: pruning's mark.
	own  int32
	keep bool
}

// write is one write to the protected resource.
type write struct {
	client  int32
	hold    int32 // index into holds, -1 when the client held nothing
	readAt  int64 // when the value it was based on was read (-1 unknown)
	readVal int64
	t, at   int64 // invoke, applied
	value   int64
	fence   uint64
	ok      bool
}

// srvEvent is one keyspace notification.
type srvEvent struct {
	t    int64
	node int16
	kind uint8
}

const (
	srvSet uint8 = iota // set, hset, hincrby, ... (the key was written)
	srvDel
	srvExpired
	srvExpire // pexpire / expire (TTL changed)
	srvOther
)

func srvKind(d string) uint8 {
	switch d {
	case "del":
		return srvDel
	case "expired", "evicted":
		return srvExpired
	case "expire", "pexpire":
		return srvExpire
	case "set", "hset", "hincrby", "hincrbyfloat", "setrange", "incrby", "incr", "append", "hdel":
		return srvSet
	}
	return srvOther
}

// nested is a re-entry (acquire at depth ≥ 2 while holding), or (stale)
// an acquire of a key the client did not hold that answered depth ≥ 2: the
// lock counted levels the client had released.
type nested struct {
	client int32
	t, at  int64
	depth  int32
	hold   int32
	stale  bool
}

// attempt is an acquire that did not succeed (for liveness).
type attempt struct {
	t, end  int64
	client  int32
	unknown bool // answered unknown (else failed)
}

// fault is one fault firing with its heal.
type fault struct {
	id            int
	kind, target  string
	node          string
	t, end, healT int64
	applied       bool
	v             history.FaultView // its request and effect, typed
	clientTarget  int               // -1 unless the target is a client
	dir           string            // partition, latency: the direction asked
	healRecorded  bool
	healEff       map[string]string // what its heal measured (stall-commands: the commands it delayed)
	// lasts is the duration the schedule asked for (0: none, or unknown):
	// its heal is due then.
	lasts int64
	// crashAt is when a crash-client fault's client died: its effect's
	// crashed_at_ms, else the end of its firing (it fires, waits for the
	// client's point, crashes it and returns).
	crashAt int64
}

type pause struct {
	t, end int64
	point  string
}

// smallMap maps keys to values in two short slices: a client holds and
// reads few keys at a time, and a linear scan beats hashing per event.
type smallMap[V any] struct {
	ks []int32
	vs []V
}

func (s *smallMap[V]) get(k int32) (V, bool) {
	for i, x := range s.ks {
		if x == k {
			return s.vs[i], true
		}
	}
	var zero V
	return zero, false
}

func (s *smallMap[V]) set(k int32, v V) {
	for i, x := range s.ks {
		if x == k {
			s.vs[i] = v
			return
		}
	}
	s.ks = append(s.ks, k)
	s.vs = append(s.vs, v)
}

func (s *smallMap[V]) del(k int32) {
	for i, x := range s.ks {
		if x == k {
			n := len(s.ks) - 1
			s.ks[i], s.vs[i] = s.ks[n], s.vs[n]
			s.ks, s.vs = s.ks[:n], s.vs[:n]
			return
		}
	}
}

type clientState struct {
	open   smallMap[int32] // key → index of the open hold
	depth  smallMap[int32] // key → current hold count
	lastRd smallMap[[2]int64]
	// lastKey caches the last key name this client named and its index.
	lastKey string
	lastIdx int32
	pauses  []pause
	// pausesOutOfOrder: a pause began before the one recorded ahead of it
	// (not in a history the runner writes): granted scans them all.
	pausesOutOfOrder bool
	crashes          []*fault // the crash-client and sigterm faults that took effect on it
	ok               int64    // successful top-level acquires
	tried            int64    // acquire calls
}

type keyData struct {
	holds    []int32
	writes   []write
	srv      []srvEvent
	releases []release
	renewals []renewal
	nested   []nested
	failed   []attempt
	pmax     []int64 // see index
	indexed  bool    // holds sorted and pmax current
	relMax   []int64 // running max of release ends (callAt)
	renMax   []int64 // running max of renewal ends

	// attributeDels' walk: srv[:walked] are attributed; owner (and the
	// holds' matched marks) carry its state from one judged window to the
	// next.
	walked  int
	owner   map[int16]int32
	badDels []badDel
	// What pruning dropped (math.MinInt64: nothing): the latest start of
	// a dropped hold, the latest dropped server event and renewal. A
	// lookup that would have needed them makes the check inexact.
	cutHold, cutSrv, cutUnanswered int64
	// cutCmd: the latest recorded command dropped.
	cutCmd int64
	// droppedHeldTo: the latest end of a dropped hold.
	droppedHeldTo int64

	// The command record (cmdrecord.go): the key's changes in the order
	// each node ran them, the replay's walk and state per node, and the
	// changes it found made by a client that did not own the key.
	cmds      []cmdEvent
	cmdWalked int
	state     map[int16]*keyState
	cmdDels   []badDel
	cmdFrees  []cmdFree
	// The lock's own commands the own-command causes read (ownercause.go).
	// ownMaybe: SET NXs on independent masters whose take the replay
	// cannot tell (the key's TTL ran out within the record's margin).
	ownGrants, ownMaybe, ownForeign, ownIncrs []ownCmd
	// ownRefused: SET NXs of acquires that returned ok, which found the
	// key held by another client (grant.go).
	ownRefused []ownCmd
	// takes: the writes that took the key for a client (keytake.go).
	takes []ownCmd
	// snaps: the key's state at the record's loss probes (recordLoss).
	snaps map[snapKey]snap

	// The key mapping (keymap.go): named, a client acquired the key (a
	// workload key); seen, the servers' record (commands or
	// notifications) named it; learnAt, how far learnKeys has read its
	// commands.
	named, seen bool
	learnAt     int
}

// model is the compact form of a history that the checks read.
type model struct {
	meta    map[string]any
	ttl     int64
	honours bool
	topo    string
	lastT   int64   // the latest event time read (stranded keys at the record's end)
	order   []int32 // liveness: scratch, a key's holds in the order they took it

	keyIdx  map[string]int32
	keys    []string
	kd      []*keyData
	nodeIdx map[string]int16
	nodes   []string

	// unc is each client's clock uncertainty (ns) in a history merged from
	// workers (MetaClockUncertainty); nil for a single process's history.
	unc    map[int32]int64
	worker map[int32]int64 // client → worker index (MetaClientWorker)
	maxUnc int64

	holds   []hold
	clients map[int32]*clientState
	byID    []*clientState // clients[id] for ids below 65536: no map lookup per event
	// observer remembers the observer's last key (keyOf), lastNode its
	// last node.
	observer    clientState
	lastNode    string
	lastNodeIdx int16
	// spans is judgeLiveness' scratch buffer.
	spans   []span
	grants  []int64 // judgeKeyLiveness's granted time per hold
	faults  []*fault
	faultBy map[int]*fault

	observerOK bool
	observerNo []string
	// The command record: cmdMode is the run's meta command_record, cmdOn
	// when it is "monitor", noRecord when the options set it aside;
	// cmdGaps where it is missing; tokOwner maps a token to the client
	// that wrote it (a replica's copies name no client); prefix is the
	// run's key prefix.
	cmdMode  string
	cmdOn    bool
	cmdWhy   string
	noRecord bool
	cmdSeen  bool
	cmdGaps  []cmdGap
	// cmdClocks: each node's clock settings in its record (by node).
	cmdClocks []*nodeClock
	// tokAcq: each acquire's token and its result, with a record: a SET
	// NX the replay cannot judge took the key when its acquire returned ok
	// with its token. Streaming drops the old ones (pruneTokens).
	tokAcq map[string]tokResult
	// sharedDels, clientDels: recorded deletes of a present key by a
	// connection that several clients share (a driver process, lock
	// option tasks: no client's) and by a client's own.
	sharedDels, clientDels int
	// acqTok: the token each acquire that returned ok carried, by client
	// and ack; tokWritten: the record showed a client writing an ok
	// acquire's token; tokCut: acqTok was pruned up to here (grant.go).
	acqTok     map[acqKey]string
	tokWritten bool
	tokCut     int64
	// cmdJudged: the record was replayed up to here.
	cmdJudged int64
	tokOwner  map[string]tokWriter
	prefix    string
	lag       int64 // Options.ObserverLag
	dels      int
	notes     []string
	badEvents int
	nHolds    int // holds ever added
	matchedHi map[matchKey]bool
	lossHows  []string
	// keyMap is the key mapping (keymap.go).
	keyMap keyMap
	// expSeen: for a hold kept for an old unanswered renewal, the first
	// expiry on each node after its ack among the server events pruning
	// dropped (expiredBefore).
	expSeen    map[int32]map[int16]int64
	lossHowIdx map[string]int32

	// The window being judged: checks count and report what is anchored
	// in [from, to) (see stream.go); final is the last window.
	from, to int64
	final    bool
	// inexact says why a judged window may have needed something pruning
	// had dropped, or an event came after its time was judged ("": exact).
	inexact string
}

// in reports whether an anchor time falls in the window being judged.
func (m *model) in(t int64) bool { return t >= m.from && t < m.to }

// setInexact records the first reason the streamed result may differ from
// checking the whole history at once.
func (m *model) setInexact(why string) {
	if m.inexact == "" {
		m.inexact = why
	}
}

func newModel() *model {
	return &model{keyIdx: map[string]int32{}, nodeIdx: map[string]int16{}, clients: map[int32]*clientState{}, observer: clientState{lastIdx: -1}, lastNodeIdx: -1,
		faultBy: map[int]*fault{}, honours: true, tokCut: math.MinInt64}
}

func (m *model) key(k string) int32 {
	if i, ok := m.keyIdx[k]; ok {
		return i
	}
	i := int32(len(m.keys))
	m.keyIdx[k] = i
	m.keys = append(m.keys, k)
	m.kd = append(m.kd, &keyData{cutHold: math.MinInt64, cutSrv: math.MinInt64, cutUnanswered: math.MinInt64, cutCmd: math.MinInt64,
		droppedHeldTo: math.MinInt64})
	return i
}

// keyOf is key for a client's event: a client's consecutive steps mostly
// name one key, so its last one is remembered.
func (m *model) keyOf(c *clientState, name string) int32 {
	if c.lastIdx >= 0 && c.lastKey == name {
		return c.lastIdx
	}
	c.lastKey, c.lastIdx = name, m.key(name)
	return c.lastIdx
}

func (m *model) node(n string) int16 {
	if i, ok := m.nodeIdx[n]; ok {
		return i
	}
	i := int16(len(m.nodes))
	m.nodeIdx[n] = i
	m.nodes = append(m.nodes, n)
	return i
}

func (m *model) client(id int) *clientState {
	if id >= 0 && id < len(m.byID) && m.byID[id] != nil {
		return m.byID[id]
	}
	c := m.clients[int32(id)]
	if c == nil {
		c = &clientState{lastIdx: -1}
		m.clients[int32(id)] = c
	}
	if id >= 0 && id < 1<<16 {
		if id >= len(m.byID) {
			m.byID = append(m.byID, make([]*clientState, id+1-len(m.byID))...)
		}
		m.byID[id] = c
	}
	return c
}

func metaInt(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		return int64(x), true
	case int:
		return int64(x), true
	case int64:
		return x, true
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// add folds one event into the model. Events of one client arrive in its
// program order (each client records its own steps in sequence).
func (m *model) add(e *history.Event) {
	m.lastT = max(m.lastT, e.T, e.End)
	switch e.Op {
	case history.OpRun:
		m.addRun(e)
	case history.OpAcquire:
		m.addAcquire(e)
	case history.OpRelease:
		m.addRelease(e)
	case history.OpLost:
		c := m.client(e.Client)
		k := m.keyOf(c, e.Key)
		if hi, ok := c.open.get(k); ok {
			h := &m.holds[hi]
			h.endT, h.how = e.T, endLost
			c.open.del(k)
			c.depth.del(k)
		}
	case history.OpTold:
		// The lock told the client; the hold ends when the client acts on
		// it (OpLost, its release): loss detection measures to here.
		c := m.client(e.Client)
		if hi, ok := c.open.get(m.keyOf(c, e.Key)); ok && m.holds[hi].told == 0 {
			m.holds[hi].told = e.T
		}
	case history.OpRenew:
		m.addRenew(e)
	case history.OpRead:
		c := m.client(e.Client)
		k := m.keyOf(c, e.Key)
		c.lastRd.set(k, [2]int64{max(e.End, e.T), e.Value})
		if hi, ok := c.open.get(k); ok {
			h := &m.holds[hi]
			h.lastAct = max(h.lastAct, e.End, e.T) // a read changes nothing: it does not extend the belief
		}
	case history.OpWrite:
		m.addWrite(e)
	case history.OpPause:
		c := m.client(e.Client)
		if n := len(c.pauses); n > 0 && e.T < c.pauses[n-1].t {
			c.pausesOutOfOrder = true
		}
		c.pauses = append(c.pauses, pause{e.T, e.End, e.Detail})
	case history.OpFault:
		m.addFault(e)
	case history.OpHeal:
		if e.Fault == nil {
			m.badEvents++
			return
		}
		if f := m.faultBy[e.Fault.ID]; f != nil {
			f.healT, f.healRecorded, f.healEff = e.T, true, e.Fault.Effect
		}
	case history.OpCommand:
		m.addCommand(e)
	case history.OpServer:
		m.addServer(e)
	case history.OpKeys:
		m.addKeys(e)
	}
}

// addRun reads the run's meta: the TTL, the topology, the command record,
// the clients' clock uncertainty and workers.
func (m *model) addRun(e *history.Event) {
	m.meta = e.Meta
	if v, ok := metaInt(e.Meta[history.MetaTTLms]); ok {
		m.ttl = v * 1e6
	}
	if v, ok := e.Meta[history.MetaHonours].(bool); ok {
		m.honours = v
	}
	m.topo, _ = e.Meta[history.MetaTopology].(string)
	m.prefix, _ = e.Meta[history.MetaKeyPrefix].(string)
	m.cmdMode, _ = e.Meta[history.MetaCommandRecord].(string)
	m.cmdOn = m.cmdMode == "monitor"
	u, ok := e.Meta[history.MetaClockUncertainty].(map[string]any)
	if !ok {
		return
	}
	m.unc = map[int32]int64{}
	for id, v := range u {
		c, err := strconv.Atoi(id)
		ns, ok := metaInt(v)
		if err == nil && ok && ns > 0 {
			m.unc[int32(c)] = ns
			m.maxUnc = max(m.maxUnc, ns)
		}
	}
	m.worker = map[int32]int64{}
	if wk, ok := e.Meta[history.MetaClientWorker].(map[string]any); ok {
		for id, v := range wk {
			c, err := strconv.Atoi(id)
			if w, ok := metaInt(v); ok && err == nil {
				m.worker[int32(c)] = w
			}
		}
	}
}

// addRenew records a renewal, and extends the hold's deadline when it
// succeeded (counts it bad when not).
func (m *model) addRenew(e *history.Event) {
	c := m.client(e.Client)
	k := m.keyOf(c, e.Key)
	m.kd[k].renewals = append(m.kd[k].renewals, renewal{client: int32(e.Client), t: e.T, end: e.End, unanswered: e.Result == history.Unknown, own: -1})
	if hi, ok := c.open.get(k); ok {
		h := &m.holds[hi]
		if e.Result == history.OK {
			if m.ttl > 0 && h.deadline > 0 {
				h.deadline = max(h.deadline, e.T+m.ttl)
			}
		} else {
			h.renewBad++
		}
	}
}

// addServer records a keyspace notification of the observer (or that it
// could not observe a node).
func (m *model) addServer(e *history.Event) {
	if e.Detail == "observer-unavailable" {
		m.observerNo = append(m.observerNo, e.Node)
		return
	}
	m.observerOK = true
	if e.Key == "" {
		return
	}
	k := m.keyOf(&m.observer, e.Key)
	m.kd[k].seen = true
	if e.Node != m.lastNode || m.lastNodeIdx < 0 {
		m.lastNode, m.lastNodeIdx = e.Node, m.node(e.Node)
	}
	m.kd[k].srv = append(m.kd[k].srv, srvEvent{e.T, m.lastNodeIdx, srvKind(e.Detail)})
}

func (m *model) act(h *hold, at int64) {
	h.lastAct = max(h.lastAct, at)
	if h.deadline > 0 && at > h.deadline {
		h.actAfter = max(h.actAfter, at)
	}
	if h.told > 0 && at > h.told {
		h.actAfterTold = max(h.actAfterTold, at)
	}
}

func (m *model) addAcquire(e *history.Event) {
	if m.cmdOn && e.Token != "" {
		if m.tokAcq == nil {
			m.tokAcq = map[string]tokResult{}
		}
		m.tokAcq[e.Token] = tokResult{res: e.Result, t: max(e.T, e.End), client: int32(e.Client)}
		if e.Result == history.OK {
			if m.acqTok == nil {
				m.acqTok = map[acqKey]string{}
			}
			m.acqTok[acqKey{int32(e.Client), e.End}] = e.Token
		}
	}
	c := m.client(e.Client)
	k := m.keyOf(c, e.Key)
	c.tried++
	m.kd[k].named = true
	if e.Result == history.OK {
		m.learnFrom(e, k)
	}
	hi, holding := c.open.get(k)
	if e.Result != history.OK {
		if !holding {
			m.kd[k].failed = append(m.kd[k].failed, attempt{e.T, e.End, int32(e.Client), e.Result == history.Unknown})
		}
		return
	}
	if holding && e.Depth == 1 {
		// A re-entry that found the key gone and took it afresh (a hash
		// lock after expiry): the old hold ended when its validity did, a
		// new one starts now.
		m.kd[k].nested = append(m.kd[k].nested, nested{int32(e.Client), e.T, e.End, 1, hi, false})
		h := &m.holds[hi]
		h.endT, h.how = e.T, endLost
		c.open.del(k)
		holding = false
	}
	if holding {
		// A re-entry (or, for a non-reentrant lock, an acquire of a key the
		// client believes it holds already).
		d, _ := c.depth.get(k)
		c.depth.set(k, d+1)
		m.kd[k].nested = append(m.kd[k].nested, nested{int32(e.Client), e.T, e.End, int32(e.Depth), hi, false})
		h := &m.holds[hi]
		h.lastAct = max(h.lastAct, e.End)
		if e.Deadline > 0 {
			h.deadline = max(h.deadline, e.Deadline)
		}
		return
	}
	c.ok++
	h := hold{client: int32(e.Client), key: k, acqT: e.T, start: e.End, deadline: e.Deadline, lastAct: e.End, fence: e.Fence}
	if e.Deadline > 0 && e.Deadline <= e.End {
		h.lateDeadline = e.Deadline
	}
	m.holds = append(m.holds, h)
	m.nHolds++
	hi = int32(len(m.holds) - 1)
	c.open.set(k, hi)
	c.depth.set(k, 1)
	m.kd[k].holds = append(m.kd[k].holds, hi)
	if e.Depth > 1 {
		m.kd[k].nested = append(m.kd[k].nested, nested{int32(e.Client), e.T, e.End, int32(e.Depth), hi, true})
	}
}

func (m *model) addRelease(e *history.Event) {
	c := m.client(e.Client)
	k := m.keyOf(c, e.Key)
	m.kd[k].releases = append(m.kd[k].releases, release{int32(e.Client), int32(e.Depth), e.T, e.End, e.Result == history.Fail})
	hi, ok := c.open.get(k)
	if !ok {
		return
	}
	if e.Depth > 0 {
		c.depth.set(k, int32(e.Depth))
		return
	}
	h := &m.holds[hi]
	h.endT, h.how, h.relEnd = e.T, endReleased, e.End
	c.open.del(k)
	c.depth.del(k)
}

func (m *model) addWrite(e *history.Event) {
	c := m.client(e.Client)
	k := m.keyOf(c, e.Key)
	at := e.End
	if at == 0 {
		at = e.T
	}
	w := write{client: int32(e.Client), hold: -1, readAt: -1, t: e.T, at: at, value: e.Value, fence: e.Fence, ok: e.Result != history.Fail}
	if rd, ok := c.lastRd.get(k); ok {
		w.readAt, w.readVal = rd[0], rd[1]
		c.lastRd.del(k)
	}
	if hi, ok := c.open.get(k); ok {
		w.hold = hi
		m.act(&m.holds[hi], at)
	}
	m.kd[k].writes = append(m.kd[k].writes, w)
}

func (m *model) addFault(e *history.Event) {
	if e.Fault == nil {
		m.badEvents++
		return
	}
	f := &fault{id: e.Fault.ID, kind: e.Fault.Kind, target: e.Fault.Target, node: e.Node, t: e.T, end: max(e.End, e.T),
		applied: e.Fault.Applied, v: e.Fault.View(), clientTarget: -1, dir: e.Fault.Request[history.ParamDirection]}
	if d, err := time.ParseDuration(e.Fault.Request["duration"]); err == nil && d > 0 {
		f.lasts = int64(d)
	}
	if n, ok := strings.CutPrefix(f.target, "client "); ok {
		if id, err := strconv.Atoi(n); err == nil {
			f.clientTarget = id
		}
	}
	if endsClient(f.kind) {
		f.crashAt = f.end
		if v, err := strconv.ParseFloat(e.Fault.Effect[history.EffectCrashedAt], 64); err == nil && v >= 0 {
			f.crashAt = int64(v * 1e6)
		}
		if f.applied && f.clientTarget >= 0 {
			c := m.client(f.clientTarget)
			c.crashes = append(c.crashes, f)
		}
	}
	m.faults = append(m.faults, f)
	m.faultBy[f.id] = f
}

// endsClient: a fault of kind ends its client for good, holding what it
// holds (crash-client; sigterm, whose process ended at crashed_at_ms after
// its shutdown hooks ran, releasing or not).
func endsClient(kind string) bool {
	return kind == history.FaultCrashClient || kind == history.FaultSigterm
}

// stillInEffect is the heal time of a fault whose heal is not read yet:
// far beyond any run, with room to add a TTL.
const stillInEffect = math.MaxInt64 / 4

// prepare computes every hold's belief end from what was read so far (a
// hold still open gets a provisional one) and orders each key's tables;
// it runs before every judged window.
func (m *model) prepare(o Options) {
	for i := range m.holds {
		h := &m.holds[i]
		end := h.endT
		if h.how == endOpen {
			end = h.lastAct
		}
		h.heldTo = end
		if m.honours && h.deadline > 0 && h.deadline < end {
			end = max(h.deadline, h.actAfter, h.start)
		}
		if m.honours && h.deadline == 0 && h.told > 0 && h.told < end {
			// A lease with no deadline whose only loss signal is the
			// lock's notification (rueidislock's cancelled context): the
			// lock told the holder, as a deadline would; what the holder
			// did before it looked (a write) still counts.
			end = max(h.told, h.actAfterTold, h.start)
		}
		h.belief = end
		h.empty = m.honours && h.deadline > 0 && h.deadline <= h.start && h.actAfter == 0
	}
	for _, f := range m.faults {
		switch {
		case f.healRecorded:
		case f.applied && !m.final:
			// Every fault that took effect is healed and its heal
			// recorded (by the end of the run at the latest): until then
			// it is still in effect.
			f.healT = stillInEffect
		default:
			// Never healed in the record: the run was cut short.
			f.healT = f.end
		}
	}
	m.lag = o.ObserverLag
	m.noRecord = o.NoCommandRecord
	m.learnKeys()
	for _, kd := range m.kd {
		// Stable: notifications with equal times keep the observer's order.
		sort.SliceStable(kd.srv, func(i, j int) bool { return kd.srv[i].t < kd.srv[j].t })
		sort.SliceStable(kd.releases, func(i, j int) bool { return kd.releases[i].t < kd.releases[j].t })
		sort.SliceStable(kd.renewals, func(i, j int) bool { return kd.renewals[i].t < kd.renewals[j].t })
		kd.relMax = runningMax(kd.relMax, kd.releases, releaseSpan)
		kd.renMax = runningMax(kd.renMax, kd.renewals, renewalSpan)
		kd.indexed = false
	}
}

// faultActive reports whether f was in effect at some time in [a, b]: from
// its firing to its heal (instantaneous faults: their recorded span).
func (f *fault) overlaps(a, b int64) bool {
	return f.t <= b && max(f.healT, f.end) >= a
}

// index sorts a key's holds by belief start and keeps the running maximum
// of their belief ends, so that "who believed it held k at t" is a binary
// search plus a short backward scan.
func (m *model) index(kd *keyData) {
	if kd.indexed {
		return
	}
	kd.indexed = true
	sort.Slice(kd.holds, func(i, j int) bool {
		a, b := kd.holds[i], kd.holds[j]
		return m.holds[a].start < m.holds[b].start || m.holds[a].start == m.holds[b].start && a < b
	})
	kd.pmax = slices.Grow(kd.pmax[:0], len(kd.holds))[:len(kd.holds)]
	var mx int64
	for i, hi := range kd.holds {
		mx = max(mx, m.holds[hi].belief)
		kd.pmax[i] = mx
	}
}

// srvFrom returns the index of key k's first server event at or after t.
func (m *model) srvFrom(k int32, t int64) int {
	if t <= m.kd[k].cutSrv {
		m.setInexact(fmt.Sprintf("server events of %s from %s on had been pruned", m.keys[k], sec(t)))
	}
	srv := m.kd[k].srv
	return sort.Search(len(srv), func(i int) bool { return srv[i].t >= t })
}

// uncertainty is how far apart two clients' clocks may be (ns): the sum of
// their workers' error bounds against the server's TIME; 0 within one
// process.
func (m *model) uncertainty(a, b int32) int64 {
	if m.unc == nil || a == b {
		return 0
	}
	if wa, ok := m.worker[a]; ok {
		if wb, ok := m.worker[b]; ok && wa == wb {
			return 0 // one worker, one clock
		}
	}
	return m.unc[a] + m.unc[b]
}

// uncertainNote says what the checks set aside as within clock uncertainty.
func uncertainNote(n int, longest int64, what string) string {
	return fmt.Sprintf("%d %s of at most %.3f ms were shorter than the two clients' combined clock uncertainty (merged workers): not evidence, so at best unknown", n, what, history.MS(longest))
}
