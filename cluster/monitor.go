package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/keyspace"
)

// How the command record was obtained (Record.Mode).
const (
	// RecordMonitor: every data node's MONITOR stream was recorded.
	RecordMonitor = "monitor"
	// RecordUnavailable: the backend (embedded) or the server (MONITOR
	// refused by an ACL or renamed) gave no record; the keyspace observer
	// is the only view of the servers.
	RecordUnavailable = "unavailable"
	// RecordOff: the run did not ask for one (bench).
	RecordOff = "off"
)

// RecordStatus says how the command record was obtained.
type RecordStatus struct {
	Mode string
	// Note is a sentence for the results when Mode is not RecordMonitor.
	Note string
}

// ConnName is the name a lock client's connections carry (CLIENT
// SETNAME): the command record ties each command to its client by it.
func ConnName(runID string, client int) string {
	return "lc-" + runID + "-c" + strconv.Itoa(client)
}

// ClientOfConnName is the client id a connection name of run runID
// carries, or -1 (another run's, the harness's, unnamed).
func ClientOfConnName(runID, name string) int {
	rest, ok := strings.CutPrefix(name, "lc-"+runID+"-c")
	if !ok {
		return -1
	}
	id, err := strconv.Atoi(rest)
	if err != nil || id < 0 {
		return -1
	}
	return id
}

// monitorName is the record's own connection's name.
const monitorName = "lc-monitor"

// Record streams the MONITOR output of every data node into the history:
// each command that names a key under p, with the script commands that
// follow an EVAL/EVALSHA/FCALL (`[0 lua]` lines) attached to it, becomes
// an OpCommand event. T is the server's time of the command (MONITOR's
// stamp) on the run clock (toRun); Client is the lock client whose
// connection ran it, by the connection's name (ConnName): the names come
// from CLIENT LIST when the record starts and from the CLIENT SETNAME
// lines of the stream itself, which MONITOR shows with their address
// before any command of that connection.
//
// A MONITOR connection that breaks (a node killed or restarted) is
// recorded as a history.CmdGap event on that node; the record dials again
// every 50 ms and marks history.CmdResumed when it is back: commands in
// between are missing, and the checker says so and falls back to the
// keyspace observer.
//
// Replicas are recorded too (they show the commands replicated to them,
// from their master's connection): after a promotion the new master's
// record is already running.
func Record(ctx context.Context, c *Cluster, p keyspace.Prefix, runID string, record func(*history.Event), now func() int64, toRun func(time.Time) int64) (stop func(), st RecordStatus, err error) {
	if c.Backend == Embedded {
		return func() {}, RecordStatus{Mode: RecordUnavailable, Note: "backend embedded has no MONITOR: ownership checks use the keyspace observer"}, nil
	}
	// The record outlives its run's context: an interrupted run (Ctrl-C)
	// still stops it through the stop function on its way out, which
	// drains what the nodes ran before (endAll). A record that ended with
	// the context dropped that tail (416 of 5000 commands,
	// TestRecordStopKeepsTheTail). Starting it still heeds ctx.
	startCtx := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var started []*monitorNode
	stopAll := func() {
		cancel()
		for _, m := range started {
			m.close()
		}
		wg.Wait()
	}
	for _, n := range c.Nodes {
		if n.Role == "sentinel" {
			continue
		}
		m := &monitorNode{node: n.Name, addr: n.ServerAddr, tls: n.tls, password: c.password, prefix: string(p), runID: runID,
			record: record, now: now, toRun: toRun, names: map[string]string{}, clock: n.Clock, ended: make(chan struct{})}
		m.startClock()
		if err := m.connect(startCtx); err != nil {
			stopAll()
			if c.Backend == External {
				return func() {}, RecordStatus{Mode: RecordUnavailable, Note: fmt.Sprintf("MONITOR refused by node %s (%v): ownership checks use the keyspace observer", n.Name, err)}, nil
			}
			return func() {}, RecordStatus{}, fmt.Errorf("command record on node %s: %w", n.Name, err)
		}
		started = append(started, m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.run(ctx)
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			endAll(ctx, started)
			stopAll()
		})
	}, RecordStatus{Mode: RecordMonitor}, nil
}

// endAll waits until every node's record has handled what the node ran
// before the stop (markEnd), at most endWait. Cancelling at once dropped
// the lines read and not yet handled: 672 of 5000 SETs answered just
// before the stop (TestRecordStopKeepsTheTail), a run's last releases.
func endAll(ctx context.Context, nodes []*monitorNode) {
	deadline := time.Now().Add(endWait)
	var wg sync.WaitGroup
	for _, m := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.markEnd(ctx, deadline)
		}()
	}
	wg.Wait()
}

// monitorNode is one node's MONITOR connection and its state.
type monitorNode struct {
	node, addr, password, prefix, runID string
	tls                                 *tls.Config
	record                              func(*history.Event)
	now                                 func() int64
	toRun                               func(time.Time) int64

	mu   sync.Mutex
	conn net.Conn
	rd   *bufio.Reader
	// names maps a connection's address to its name.
	names map[string]string
	// pending is a script command waiting for the inner commands that
	// follow it.
	pending *history.Event
	// ended is closed when the record has handled its end marker (markEnd).
	ended   chan struct{}
	endOnce sync.Once

	// The node's own clock (nil: the host's): seg is the setting its
	// stream is at, segN how many settings that is, prevStamp the last
	// command's stamp (unix ns). See placeClock.
	clock     *ServerClock
	seg       ClockChange
	segN      int
	prevStamp int64
	// wall is the host's clock (unix ns) when a line is read (nil:
	// time.Now; tests set it).
	wall func() int64
}

func (m *monitorNode) close() {
	m.mu.Lock()
	if m.conn != nil {
		_ = m.conn.Close()
	}
	m.mu.Unlock()
}

// connect dials the node, names the connection, reads CLIENT LIST and
// starts MONITOR.
func (m *monitorNode) connect(ctx context.Context) error {
	cn, rd, do, err := m.dial(ctx)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = cn.Close()
		return err
	}
	if _, err := do("CLIENT", "SETNAME", monitorName); err != nil {
		return fail(fmt.Errorf("CLIENT SETNAME: %w", err))
	}
	list, err := do("CLIENT", "LIST")
	if err != nil {
		return fail(fmt.Errorf("CLIENT LIST: %w", err))
	}
	names := parseClientList(list)
	if _, err := do("MONITOR"); err != nil {
		return fail(fmt.Errorf("MONITOR: %w", err))
	}
	_ = cn.SetDeadline(time.Time{})
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn != nil {
		_ = m.conn.Close()
	}
	if ctx.Err() != nil {
		_ = cn.Close()
		return ctx.Err()
	}
	m.conn, m.rd = cn, rd
	for a, n := range names {
		m.names[a] = n
	}
	return nil
}

// dial connects to the node (authenticated when it has a password), with a
// 3 s deadline on the connection; do sends one command and reads its reply.
func (m *monitorNode) dial(ctx context.Context) (cn net.Conn, rd *bufio.Reader, do func(args ...string) (string, error), err error) {
	d := &net.Dialer{Timeout: time.Second}
	if m.tls != nil {
		cn, err = (&tls.Dialer{NetDialer: d, Config: m.tls}).DialContext(ctx, "tcp", m.addr)
	} else {
		cn, err = d.DialContext(ctx, "tcp", m.addr)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	rd = bufio.NewReaderSize(cn, 1<<20)
	_ = cn.SetDeadline(time.Now().Add(3 * time.Second))
	do = func(args ...string) (string, error) {
		var b []byte
		b = append(b, '*')
		b = strconv.AppendInt(b, int64(len(args)), 10)
		b = append(b, "\r\n"...)
		for _, a := range args {
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(len(a)), 10)
			b = append(b, "\r\n"...)
			b = append(b, a...)
			b = append(b, "\r\n"...)
		}
		if _, err := cn.Write(b); err != nil {
			return "", err
		}
		return readReply(rd)
	}
	if m.password != "" {
		if _, err := do("AUTH", m.password); err != nil {
			_ = cn.Close()
			return nil, nil, nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return cn, rd, do, nil
}

// endWait bounds how long a stopping record waits for each node's end
// marker (markEnd).
const endWait = 2 * time.Second

// markEnd sends the node an ECHO of the record's end marker on a
// connection of its own and waits, up to deadline, until the record has
// handled it: every command the node ran before (the run's last releases,
// whose lines the server wrote before their replies) is handled too, since
// MONITOR shows a node's commands in the order it ran them. A node that
// cannot be reached (killed, or its record in a gap) has nothing more to
// give: the wait ends at once, or at the deadline.
func (m *monitorNode) markEnd(ctx context.Context, deadline time.Time) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	cn, _, do, err := m.dial(ctx)
	if err != nil {
		return
	}
	_ = cn.SetDeadline(deadline) // a node that does not answer (stopped) holds the stop no longer
	_, err = do("ECHO", m.endMark())
	_ = cn.Close()
	if err != nil {
		return
	}
	select {
	case <-m.ended:
	case <-ctx.Done():
	}
}

// endMark is the ECHO argument markEnd sends (one per run and node).
func (m *monitorNode) endMark() string { return "lc-record-end:" + m.runID + ":" + m.node }

// readReply reads one RESP2 reply: a simple string, an error or a bulk
// string (what AUTH, CLIENT and MONITOR answer).
func readReply(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// parseClientList maps each connection's addr to its name (named ones
// only).
func parseClientList(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		var addr, name string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "addr="); ok {
				addr = v
			} else if v, ok := strings.CutPrefix(f, "name="); ok {
				name = v
			}
		}
		if addr != "" && name != "" {
			out[addr] = name
		}
	}
	return out
}

// run reads the stream until ctx ends, reconnecting after a break.
func (m *monitorNode) run(ctx context.Context) {
	lines := make(chan string, 4096)
	for {
		m.mu.Lock()
		rd := m.rd
		m.mu.Unlock()
		errc := make(chan error, 1)
		go func() {
			for {
				if rd.Buffered() == 0 {
					// About to wait on the socket: everything the
					// server wrote so far is in the channel (consume).
					select {
					case lines <- readerIdle:
					case <-ctx.Done():
						return
					}
				}
				line, err := rd.ReadString('\n')
				if err != nil {
					errc <- err
					return
				}
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
		}()
		err := m.consume(ctx, lines, errc)
		m.flush()
		if ctx.Err() != nil {
			return
		}
		m.record(&history.Event{T: m.now(), Client: -1, Op: history.OpCommand, Node: m.node, Detail: history.CmdGap, Err: err.Error()})
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			if m.connect(ctx) == nil {
				m.record(&history.Event{T: m.now(), Client: -1, Op: history.OpCommand, Node: m.node, Detail: history.CmdResumed})
				break
			}
		}
	}
}

// readerIdle is what the reader sends before it waits on the socket with
// nothing left in its buffer (not a line: lines end in a newline).
const readerIdle = "\x00idle"

// consume handles lines until the reader fails (its error) or ctx ends.
// A pending script is flushed when the next top-level line comes, or when
// the stream is quiet: 20 ms after the reader said it had read everything
// the server wrote (readerIdle) with no line since. Its inner commands come
// in the same write as it, so they are read before the reader is idle.
// Quiet by the consumer's clock alone was not enough: on a loaded machine
// the consumer woke after 20 ms to a fired timer before the reader had
// passed on the lines already read, flushed the script bare and dropped
// its inner commands (CI: a release's GET and DEL lost, 2 of 1040 scripts,
// and the next release read as deleting a key it did not own).
func (m *monitorNode) consume(ctx context.Context, lines chan string, errc chan error) error {
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	armed := false // quiet runs: only between a readerIdle and the next line
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			// Lines read before the error are still in the channel.
			for {
				select {
				case l := <-lines:
					if l != readerIdle {
						m.line(l)
					}
				default:
					return err
				}
			}
		case l := <-lines:
			if l == readerIdle {
				if m.pending != nil {
					quiet.Reset(20 * time.Millisecond)
					armed = true
				}
				continue
			}
			if armed {
				quiet.Stop()
				armed = false
			}
			m.line(l)
		case <-quiet.C:
			armed = false
			if len(lines) == 0 {
				m.flush()
			}
		}
	}
}

func (m *monitorNode) flush() {
	if m.pending != nil {
		m.emit(m.pending)
		m.pending = nil
	}
}

// emit records e when it names a key of the run (keyspace.Prefix.Names:
// under the prefix, or a library's own name around a lock key).
func (m *monitorNode) emit(e *history.Event) {
	key := ""
	p := keyspace.Prefix(m.prefix)
	find := func(args []string) {
		for _, a := range args[min(1, len(args)):] {
			if key == "" && p.Names(a) {
				key = a
			}
		}
	}
	find(e.Cmd.Args)
	for _, in := range e.Cmd.Inner {
		find(in)
	}
	if key == "" {
		return
	}
	e.Key, _ = p.Short(key)
	m.record(e)
}

// scriptRunAt: a script's commands are recorded at the stamp of its first
// command, the time its script began to run, not at its EVAL line's. The
// server stamps the EVAL line when it takes the command, before it compiles
// the script (EVAL) and takes the time the script's commands expire keys
// by, so the two may be far apart: an EVAL whose body took 246 ms to
// compile was stamped 52 ms before a key expired, and its EXISTS found the
// key gone; a node frozen (SIGSTOP) between the two resumes 600 ms later.
// Stamped by the EVAL line, a client's acquire that found an expired key
// free read as a write into the key's last owner's live hash (CI: paused-
// master/watchdog seed 1, unlock invalid, foreign-reentry on a correct lock).
// Every command of a script keeps that one time: a script sees keys expire
// as of the moment it began (the server's script time snapshot), whatever
// its later commands' stamps.

// line handles one MONITOR line: `+<sec.µs> [<db> <addr>] "CMD" "arg"...`.
func (m *monitorNode) line(l string) {
	l = strings.TrimRight(l, "\r\n")
	l = strings.TrimPrefix(l, "+")
	stamp, rest, ok := strings.Cut(l, " [")
	if !ok {
		return
	}
	src, argText, ok := strings.Cut(rest, "] ")
	if !ok {
		return
	}
	_, addr, _ := strings.Cut(src, " ")
	args, err := ParseMonitorArgs(argText)
	if err != nil || len(args) == 0 {
		return
	}
	if addr == "lua" {
		if m.pending != nil {
			if len(m.pending.Cmd.Inner) == 0 {
				// The script ran from here: stamped by its first
				// command, not by its EVAL line (scriptRunAt).
				m.placeClock(stamp)
				m.pending.T = m.serverTime(stamp)
			}
			m.pending.Cmd.Inner = append(m.pending.Cmd.Inner, args)
		}
		return
	}
	m.flush()
	name := strings.ToUpper(args[0])
	if name == "ECHO" && len(args) == 2 && args[1] == m.endMark() {
		m.endOnce.Do(func() { close(m.ended) })
		return
	}
	if name == "CLIENT" && len(args) >= 3 && strings.EqualFold(args[1], "SETNAME") {
		m.mu.Lock()
		m.names[addr] = args[2]
		m.mu.Unlock()
		return
	}
	m.mu.Lock()
	connName := m.names[addr]
	m.mu.Unlock()
	m.placeClock(stamp)
	e := &history.Event{T: m.serverTime(stamp), Client: ClientOfConnName(m.runID, connName), Op: history.OpCommand, Node: m.node,
		Cmd: &history.Command{Conn: addr, Name: connName, Args: args}}
	switch name {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
		m.pending = e
		return
	}
	m.emit(e)
}

// A node whose clock the harness moves (a clock fault on the process
// backend: ServerClock) stamps its commands on that clock, so that after a
// jump back its later commands carry earlier times than its earlier ones.
// The record keeps the node's order (the stream's) and marks, in it, where
// each clock change falls: a history.CmdClock event before the first
// command run under the new setting, saying the setting (the checker maps
// each command's stamp to the harness clock by the marker before it, and
// keeps the stamp itself for the node's own expiry arithmetic).
//
// Why here and not in the checker from the fault events: the harness knows
// exactly when it wrote the clock and what it wrote (ServerClock.Changes),
// the fault event only brackets the write by its start and end and comes
// after the commands it explains; and the record can tell the one case the
// stamps alone cannot (a jump back while the node is idle for longer than
// the jump: a command's stamp then fits both settings) by when its line was
// read: a command runs before its line is read.
//
// placeClock advances the stream's setting past every change the command
// stamped stamp ran after: one whose stamp cannot have been made under the
// current setting (it maps to a host time at or past the change), a stamp
// earlier than the previous command's (only a jump back makes one), or one
// that fits the new setting at a host time it had reached when the line
// was read (the later setting wins when both fit: it is wrong only if the
// line was read later than the jump's size after the command ran).
func (m *monitorNode) placeClock(stamp string) {
	if m.clock == nil {
		return
	}
	s, ok := stampNS(stamp)
	if !ok {
		return
	}
	read := time.Now().UnixNano()
	if m.wall != nil {
		read = m.wall()
	}
	for _, next := range m.clock.Changes(m.segN) {
		h := next.HostAt(s)
		if !(s < m.prevStamp || m.seg.HostAt(s) >= next.At || h >= next.At && h <= read+int64(time.Millisecond)) {
			break
		}
		m.seg = next
		m.segN++
		m.recordClock()
	}
	m.prevStamp = s
}

// startClock takes the node's clock setting as the record starts, and
// marks it when it is not the host's.
func (m *monitorNode) startClock() {
	if m.clock == nil {
		return
	}
	cs := m.clock.Changes(0)
	if len(cs) == 0 {
		return
	}
	m.seg, m.segN = cs[len(cs)-1], len(cs)
	if m.seg.Offset != 0 || m.seg.Rate != 1 {
		m.recordClock()
	}
}

// recordClock records the stream's clock setting (history.CmdClock).
func (m *monitorNode) recordClock() {
	e := &history.Event{T: m.toRun(time.Unix(0, m.seg.At)), Client: -1, Op: history.OpCommand, Node: m.node, Detail: history.CmdClock,
		Value: m.seg.Offset}
	if m.seg.Rate != 1 && m.seg.Rate > 0 {
		e.Depth = int(math.Round(m.seg.Rate * history.ClockRateUnit))
	}
	m.record(e)
}

// stampNS reads MONITOR's stamp (unix seconds with µs) as unix ns.
func stampNS(stamp string) (int64, bool) {
	sec, frac, _ := strings.Cut(stamp, ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return s*1e9 + us*1e3, true
}

// serverTime maps MONITOR's stamp (unix seconds with µs) to the run clock,
// on the node's own clock: the host time the stamp was made at (under the
// node's setting, placeClock's) goes through toRun, which follows the
// host's wall clock against the run clock, and the node's offset from the
// host stays in it (the checker takes it off by the record's CmdClock
// markers).
func (m *monitorNode) serverTime(stamp string) int64 {
	ns, ok := stampNS(stamp)
	if !ok {
		return m.now()
	}
	h := ns
	if m.clock != nil {
		h = m.seg.HostAt(ns)
	}
	return m.toRun(time.Unix(0, h)) + (ns - h)
}

// ParseMonitorArgs splits the arguments of a MONITOR line: each is quoted,
// with the escapes of the server's sdscatrepr (\" \\ \n \r \t \a \b and
// \xHH).
func ParseMonitorArgs(s string) ([]string, error) {
	var out []string
	i := 0
	for i < len(s) {
		if s[i] == ' ' {
			i++
			continue
		}
		if s[i] != '"' {
			return nil, fmt.Errorf("argument at %d not quoted: %q", i, s)
		}
		i++
		var b []byte
		closed := false
		for i < len(s) {
			ch := s[i]
			if ch == '"' {
				closed = true
				i++
				break
			}
			if ch != '\\' || i+1 >= len(s) {
				b = append(b, ch)
				i++
				continue
			}
			i++
			switch e := s[i]; e {
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'a':
				b = append(b, '\a')
			case 'b':
				b = append(b, '\b')
			case 'x':
				if i+2 < len(s) {
					if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
						b = append(b, byte(v))
						i += 2
						break
					}
				}
				b = append(b, 'x')
			default:
				b = append(b, e)
			}
			i++
		}
		if !closed {
			return nil, fmt.Errorf("unterminated argument: %q", s)
		}
		out = append(out, string(b))
	}
	return out, nil
}
