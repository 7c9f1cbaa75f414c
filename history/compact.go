package history

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The compact history: the same events as the JSONL form, as
// length-prefixed binary records in a zstd stream (file history.lch). At
// full speed the JSONL costs about 100 bytes an event; this form about a
// tenth of that (docs/run-directory.md, "The history"). Times are deltas, strings that
// repeat (keys, ops, nodes, errors) are interned, a release's token is a
// reference to its acquire's, and a 32-hex-digit token is stored as its 16
// bytes. `lockchaos export --jsonl` writes the readable form, and every
// reader (check, report, the checker's CheckFile) takes either.
//
// Stream layout, after zstd: the magic "LCH\x02", then records, each a
// uvarint length and that many bytes:
//
//	flags  uvarint  which optional fields follow (the f* bits)
//	op     string
//	stamp  varint   max(t, end) (t without fEnd), delta from the previous record's
//	client varint
//	end    varint   end - t          (fEnd; with stamp, gives both)
//	key    string                    (fKey)
//	result string                    (fResult)
//	token  16 bytes | string         (fTokenHex | fToken; fTokenSame: the client's previous token)
//	fence  uvarint                   (fFence)
//	depth  varint                    (fDepth)
//	deadline varint  deadline - t    (fDeadline)
//	value  varint                    (fValue)
//	node, err, detail  string        (fNode, fErr, fDetail)
//	fault, meta  bytes: JSON         (fFault, fMeta)
//	cmd    conn string, name string, args (the command's),
//	       uvarint m + m × args (inner)   (fCmd)
//
// A command record (fCmd without fEnd) has its own stamp: its delta from
// the previous command record's, in µs when whole (appendCmdStamp), as a
// node's record runs on the server's clock behind the clients' events. Its
// args are a count and command strings (compactEnc.args): a token among
// them is its client's last one (shared with the events' token field) or
// its bytes, never interned. Before version 4, a command's stamp was like
// any other's and its args were strings: each token an interned literal of
// its 32 hex digits, which filled the string table within seconds, and a
// contention run's history took 16 bytes an event where version 4 takes 11
// (issue 33).
//
// Version 3 ("LCH\x03") added fCmd; a version-2 stream (no command
// records) reads the same way, and so does a version-3 stream but for
// fCmd records' stamps and args.
// A string is a uvarint: 0 = a literal follows (uvarint length, bytes), 1 =
// a literal follows and takes the next table slot, n ≥ 2 = table slot n-2.
// The table holds at most compactTableMax strings.

// CompactMagic starts the decompressed stream of a compact history.
const CompactMagic = "LCH\x04"

// compactMagicV3 starts histories written before version 4's commands
// (their arguments strings as any other, their times among the others').
const compactMagicV3 = "LCH\x03"

// compactMagicV2 starts histories written before the command record: they
// decode the same way (no record has fCmd).
const compactMagicV2 = "LCH\x02"

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

const compactTableMax = 1 << 16

const (
	fEnd = 1 << iota
	fKey
	fResult
	fToken
	fTokenHex
	fTokenSame
	fFence
	fDepth
	fDeadline
	fValue
	fNode
	fErr
	fDetail
	fFault
	fMeta
	fCmd
)

// compactEnc is the encoder's state: the previous t, the string table,
// each client's last token.
type compactEnc struct {
	prevT int64
	// prevCmdT: the previous command record's time (version 4: a
	// node's record runs on the server's clock, behind the clients').
	prevCmdT int64
	table    map[string]uint64
	tokens   []string // by client+1 (client ≥ -1): a slice, not a map, as two events a lock cycle look it up
	other    map[int]*string
	// recent caches table entries by a cheap hash of the string (its
	// length and end bytes): an event's op, key and result are a few
	// strings that repeat, and a hit costs a short compare, not a map
	// lookup's hashing.
	recent [128]strSlot
}

type strSlot struct {
	s  string
	id uint64
	ok bool
}

func recentSlot(s string) int {
	if s == "" {
		return 0
	}
	return (len(s)*131 + int(s[0])*31 + int(s[len(s)-1])) & 127
}

func newCompactEnc() *compactEnc {
	return &compactEnc{table: map[string]uint64{}}
}

// lastToken is a pointer to client's last token ("" none yet).
func (c *compactEnc) lastToken(client int) *string {
	i := client + 1
	if i < 0 || i > 1<<12 { // not a client the harness numbers, or a huge id
		if c.other == nil {
			c.other = map[int]*string{}
		}
		if c.other[client] == nil {
			c.other[client] = new(string)
		}
		return c.other[client]
	}
	if i >= len(c.tokens) {
		c.tokens = append(c.tokens, make([]string, i+1-len(c.tokens))...)
	}
	return &c.tokens[i]
}

// append encodes e as one record (length prefix included) onto b.
func (c *compactEnc) append(b []byte, e *Event) []byte {
	flags := c.flags(e)
	// Encoded in place behind a one-byte length, moved up only for a
	// record of 128 bytes or more (a fault's, a command's).
	at := len(b)
	r := append(b, 0)
	r = binary.AppendUvarint(r, flags)
	r = c.appendHead(r, e, flags)
	r = c.appendFields(r, e, flags)
	if flags&fCmd != 0 {
		r = c.str(r, e.Cmd.Conn)
		r = c.str(r, e.Cmd.Name)
		tok := c.lastToken(e.Client)
		r = c.args(r, e.Cmd.Args, tok)
		r = binary.AppendUvarint(r, uint64(len(e.Cmd.Inner)))
		for _, in := range e.Cmd.Inner {
			r = c.args(r, in, tok)
		}
	}
	n := len(r) - at - 1
	if n < 0x80 {
		r[at] = byte(n)
		return r
	}
	var pre [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(pre[:], uint64(n))
	r = append(r, pre[:k-1]...)
	copy(r[at+k:], r[at+1:at+1+n])
	copy(r[at:], pre[:k])
	return r
}

// flag is f when cond holds.
func flag(cond bool, f uint64) uint64 {
	if cond {
		return f
	}
	return 0
}

// flags says which fields e has, and how its token is written (the
// client's previous one, 16 bytes of hex or raw); it remembers the token
// as the client's.
func (c *compactEnc) flags(e *Event) (flags uint64) {
	flags = flag(e.End != 0, fEnd) | flag(e.Key != "", fKey) | flag(e.Result != "", fResult)
	if e.Token != "" {
		last := c.lastToken(e.Client)
		switch {
		case *last == e.Token:
			flags |= fTokenSame
		case len(e.Token) == 32 && isLowerHex(e.Token):
			flags |= fTokenHex
		default:
			flags |= fToken
		}
		*last = e.Token
	}
	flags |= flag(e.Fence != 0, fFence) | flag(e.Depth != 0, fDepth) | flag(e.Deadline != 0, fDeadline) |
		flag(e.Value != 0, fValue) | flag(e.Node != "", fNode) | flag(e.Err != "", fErr) | flag(e.Detail != "", fDetail) |
		flag(e.Fault != nil, fFault) | flag(len(e.Meta) != 0, fMeta) | flag(e.Cmd != nil, fCmd)
	return flags
}

// appendHead writes the fields every record starts with: op, time,
// client, end, key, result and token.
func (c *compactEnc) appendHead(r []byte, e *Event, flags uint64) []byte {
	r = c.str(r, string(e.Op))
	if flags&fCmd != 0 && flags&fEnd == 0 {
		r = appendCmdStamp(r, e.T-c.prevCmdT)
		c.prevCmdT = e.T
	} else {
		// Events are written as they complete: the later of t and end
		// grows by small steps from one record to the next, while t
		// alone jumps back by an acquire's wait.
		stamp := e.T
		if flags&fEnd != 0 {
			stamp = max(e.T, e.End)
		}
		r = binary.AppendVarint(r, stamp-c.prevT)
		c.prevT = stamp
	}
	r = binary.AppendVarint(r, int64(e.Client))
	if flags&fEnd != 0 {
		r = binary.AppendVarint(r, e.End-e.T)
	}
	if flags&fKey != 0 {
		r = c.str(r, e.Key)
	}
	if flags&fResult != 0 {
		r = c.str(r, string(e.Result))
	}
	switch {
	case flags&fTokenHex != 0:
		// Decoded in place (flags checked it is hex): no allocation.
		r = appendLowerHex(r, e.Token)
	case flags&fToken != 0:
		r = appendBytes(r, e.Token)
	}
	return r
}

// appendFields writes the optional fields but the command.
func (c *compactEnc) appendFields(r []byte, e *Event, flags uint64) []byte {
	if flags&fFence != 0 {
		r = binary.AppendUvarint(r, e.Fence)
	}
	if flags&fDepth != 0 {
		r = binary.AppendVarint(r, int64(e.Depth))
	}
	if flags&fDeadline != 0 {
		// From the invoke: a lease's validity counts from its acquire's
		// start (TTL less drift), a difference that repeats and
		// compresses.
		r = binary.AppendVarint(r, e.Deadline-e.T)
	}
	if flags&fValue != 0 {
		r = binary.AppendVarint(r, e.Value)
	}
	if flags&fNode != 0 {
		r = c.str(r, e.Node)
	}
	if flags&fErr != 0 {
		r = c.str(r, e.Err)
	}
	if flags&fDetail != 0 {
		r = c.str(r, e.Detail)
	}
	if flags&fFault != 0 {
		r = appendBytes(r, string(appendMarshal(nil, e.Fault)))
	}
	if flags&fMeta != 0 {
		r = appendBytes(r, string(appendMarshal(nil, e.Meta)))
	}
	return r
}

func (c *compactEnc) str(b []byte, s string) []byte {
	sl := &c.recent[recentSlot(s)]
	if sl.ok && sl.s == s {
		return binary.AppendUvarint(b, sl.id+2)
	}
	if id, ok := c.table[s]; ok {
		*sl = strSlot{s, id, true}
		return binary.AppendUvarint(b, id+2)
	}
	if len(c.table) >= compactTableMax || len(s) > 256 {
		return appendBytes(binary.AppendUvarint(b, 0), s)
	}
	id := uint64(len(c.table))
	c.table[s] = id
	*sl = strSlot{s, id, true}
	return appendBytes(binary.AppendUvarint(b, 1), s)
}

// appendCmdStamp appends a command record's time, a delta from the
// previous command record's: MONITOR's times are whole microseconds on the
// run clock's offset, so their deltas mostly are too, and are written in
// µs (the low bit 0) rather than ns (1).
func appendCmdStamp(b []byte, d int64) []byte {
	if d%1000 == 0 {
		return binary.AppendUvarint(b, zig(d/1000)<<1)
	}
	return binary.AppendUvarint(b, zig(d)<<1|1)
}

// zig is the zig-zag encoding of a signed value (as binary.AppendVarint
// writes it).
func zig(x int64) uint64 { return uint64(x<<1) ^ uint64(x>>63) }

// args appends a command's arguments (version 4): their count, then each
// as a command string. A command's token (a SET's value, a script's
// ARGV) is the lock client's token: the last one its events carried (tok),
// or a new one, written as its bytes and kept as the client's; it is never
// interned (each cycle has its own, and they filled the string table:
// issue 33). Other arguments are interned up to cmdInternMax bytes (a
// script's body repeats with every EVAL). The command's name and its
// first argument (a key, a script's SHA1 or body) are never taken for a
// token.
//
//	uvarint 0: a literal follows; 1: a literal follows and takes the next
//	table slot; 2: the client's last token; 3: a new token follows
//	(uvarint n, n bytes: its lower-case hex, hexToken); n ≥ 4: table
//	slot n-4.
func (c *compactEnc) args(b []byte, ss []string, tok *string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for i, s := range ss {
		if i >= 2 && s != "" && s == *tok {
			b = append(b, 2)
			continue
		}
		sl := &c.recent[recentSlot(s)]
		if sl.ok && sl.s == s {
			b = binary.AppendUvarint(b, sl.id+4)
			continue
		}
		if id, ok := c.table[s]; ok {
			*sl = strSlot{s, id, true}
			b = binary.AppendUvarint(b, id+4)
			continue
		}
		if i >= 2 && hexToken(s) {
			*tok = s
			b = binary.AppendUvarint(append(b, 3), uint64(len(s)/2))
			b = appendLowerHex(b, s)
			continue
		}
		if len(c.table) >= compactTableMax || len(s) > cmdInternMax {
			b = appendBytes(append(b, 0), s)
			continue
		}
		id := uint64(len(c.table))
		c.table[s] = id
		*sl = strSlot{s, id, true}
		b = appendBytes(append(b, 1), s)
	}
	return b
}

// cmdInternMax is the longest command argument the string table takes.
const cmdInternMax = 8192

// hexToken reports whether a command's argument is taken for a token:
// lower-case hex of an even length from cmdTokenMin to 128 digits.
func hexToken(s string) bool {
	return len(s) >= cmdTokenMin && len(s) <= 128 && len(s)%2 == 0 && isLowerHex(s)
}

// cmdTokenMin: shorter hex arguments (a TTL's digits) are interned.
const cmdTokenMin = 16

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if lowerHexNibble[s[i]] > 0xf {
			return false
		}
	}
	return true
}

// lowerHexNibble is a lower-case hex digit's value, 0xff for any other
// byte: a table, since a token's digits and letters come at random and a
// branch per byte on which it is mispredicts.
var lowerHexNibble = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

// appendLowerHex appends the bytes of s, lower-case hex of even length
// (isLowerHex), decoded.
func appendLowerHex(b []byte, s string) []byte {
	for i := 0; i+1 < len(s); i += 2 {
		b = append(b, lowerHexNibble[s[i]]<<4|lowerHexNibble[s[i+1]])
	}
	return b
}

// compactDec is the decoder's state, mirroring compactEnc.
type compactDec struct {
	r     *bufio.Reader
	prevT int64
	// v4: the stream is version 4 (commands' times and arguments as
	// compactEnc.args writes them); prevCmdT as compactEnc's.
	v4       bool
	prevCmdT int64
	table    []string
	tokens   map[int]string
	buf      []byte
}

// errTorn is a record cut short at the end of the stream (a killed run).
var errTorn = errors.New("torn record")

// next decodes the next record into ev. io.EOF at a record boundary;
// errTorn when the stream ends inside one.
func (d *compactDec) next(ev *Event) error {
	n, err := binary.ReadUvarint(d.r)
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return d.torn(err)
	}
	if n > 64<<20 {
		return fmt.Errorf("record of %d bytes: not a compact history", n)
	}
	if uint64(cap(d.buf)) < n {
		d.buf = make([]byte, n)
	}
	b := d.buf[:n]
	if _, err := io.ReadFull(d.r, b); err != nil {
		return d.torn(err)
	}
	return d.decode(b, ev)
}

func (d *compactDec) torn(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errTorn
	}
	// A zstd stream cut short (a killed run's last block) reads as an
	// error of the decoder: the records before it were delivered.
	return fmt.Errorf("%w: %v", errTorn, err)
}

var errBadRecord = errors.New("malformed record")

func (d *compactDec) decode(b []byte, ev *Event) (err error) {
	*ev = Event{}
	r := recReader{b: b, d: d}
	defer func() {
		if x := recover(); x != nil {
			if x != errBadRecord {
				panic(x)
			}
			err = errBadRecord
		}
	}()
	flags := r.uv()
	d.decodeHead(&r, flags, ev)
	decodeFields(&r, flags, ev)
	if flags&fFault != 0 {
		ev.Fault = &Fault{}
		if err := json.Unmarshal(r.raw(r.uv()), ev.Fault); err != nil {
			return fmt.Errorf("fault: %w", err)
		}
	}
	if flags&fMeta != 0 {
		if err := json.Unmarshal(r.raw(r.uv()), &ev.Meta); err != nil {
			return fmt.Errorf("meta: %w", err)
		}
	}
	if flags&fCmd != 0 {
		ev.Cmd = r.command(ev.Client)
	}
	if r.p != len(b) {
		return errBadRecord
	}
	return nil
}

// recReader reads one record's fields from b at p; a field that does not
// parse panics with errBadRecord, which decode recovers.
type recReader struct {
	b []byte
	p int
	d *compactDec
}

// uv reads an unsigned varint, as binary.Uvarint does (an overflow is a
// bad record), written out so that it inlines: the decoder's hot path.
func (r *recReader) uv() uint64 {
	var v uint64
	for i, x := range r.b[r.p:] {
		if i == binary.MaxVarintLen64 {
			panic(errBadRecord)
		}
		if x < 0x80 {
			if i == binary.MaxVarintLen64-1 && x > 1 {
				panic(errBadRecord)
			}
			r.p += i + 1
			return v | uint64(x)<<(7*i)
		}
		v |= uint64(x&0x7f) << (7 * i)
	}
	panic(errBadRecord)
}

// unzig is the signed value of a zig-zag encoded varint (binary.Varint
// from binary.Uvarint): unzig(r.uv()) reads a signed varint.
func unzig(ux uint64) int64 {
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (r *recReader) raw(n uint64) []byte {
	if n > uint64(len(r.b)-r.p) {
		panic(errBadRecord)
	}
	s := r.b[r.p : r.p+int(n)]
	r.p += int(n)
	return s
}

// str reads a string: the table's entry v-2 (the common case, kept small
// enough to inline), else inline (0), or inline and added to the table (1).
func (r *recReader) str() string {
	if v := r.uv(); v >= 2 && v-2 < uint64(len(r.d.table)) {
		return r.d.table[v-2]
	} else {
		return r.newStr(v)
	}
}

func (r *recReader) newStr(v uint64) string {
	switch v {
	case 0:
		return string(r.raw(r.uv()))
	case 1:
		s := string(r.raw(r.uv()))
		r.d.table = append(r.d.table, s)
		return s
	}
	panic(errBadRecord)
}

// count reads a count of entries still to read (each at least a byte).
func (r *recReader) count() uint64 {
	n := r.uv()
	if n > uint64(len(r.b)-r.p) {
		panic(errBadRecord)
	}
	return n
}

func (r *recReader) strs() []string {
	out := make([]string, r.count())
	for i := range out {
		out[i] = r.str()
	}
	return out
}

// command reads a recorded command of client's: its connection, name,
// arguments and a MULTI's or script's inner commands.
func (r *recReader) command(client int) *Command {
	c := &Command{Conn: r.str(), Name: r.str()}
	args := r.strs
	if r.d.v4 {
		args = func() []string { return r.args(client) }
	}
	c.Args = args()
	if n := r.count(); n > 0 {
		c.Inner = make([][]string, n)
		for i := range c.Inner {
			c.Inner[i] = args()
		}
	}
	return c
}

// args reads a command's arguments as compactEnc.args writes them.
func (r *recReader) args(client int) []string {
	out := make([]string, r.count())
	for i := range out {
		switch v := r.uv(); {
		case v >= 4 && v-4 < uint64(len(r.d.table)):
			out[i] = r.d.table[v-4]
		case v == 2:
			out[i] = r.d.tokens[client]
		case v == 3:
			out[i] = hex.EncodeToString(r.raw(r.uv()))
			r.d.tokens[client] = out[i]
		case v <= 1:
			out[i] = r.newStr(v)
		default:
			panic(errBadRecord)
		}
	}
	return out
}

// decodeHead reads the fields every record starts with: op, time (a delta
// from the previous record's), client, end, key, result and token (the
// client's previous one, 16 bytes of hex, or raw).
func (d *compactDec) decodeHead(r *recReader, flags uint64, ev *Event) {
	ev.Op = Op(r.str())
	if d.v4 && flags&fCmd != 0 && flags&fEnd == 0 {
		v := r.uv()
		dt := unzig(v >> 1)
		if v&1 == 0 {
			dt *= 1000
		}
		d.prevCmdT += dt
		ev.T = d.prevCmdT
		ev.Client = int(unzig(r.uv()))
		d.decodeRest(r, flags, ev)
		return
	}
	stamp := d.prevT + unzig(r.uv())
	d.prevT = stamp
	ev.T = stamp
	ev.Client = int(unzig(r.uv()))
	if flags&fEnd != 0 {
		// stamp = max(t, end): end - t ≥ 0 means stamp is end.
		if dd := unzig(r.uv()); dd >= 0 {
			ev.T, ev.End = stamp-dd, stamp
		} else {
			ev.End = stamp + dd
		}
	}
	d.decodeRest(r, flags, ev)
}

// decodeRest reads the head's key, result and token.
func (d *compactDec) decodeRest(r *recReader, flags uint64, ev *Event) {
	if flags&fKey != 0 {
		ev.Key = r.str()
	}
	if flags&fResult != 0 {
		ev.Result = Result(r.str())
	}
	switch {
	case flags&fTokenSame != 0:
		ev.Token = d.tokens[ev.Client]
	case flags&fTokenHex != 0:
		ev.Token = hex.EncodeToString(r.raw(16))
	case flags&fToken != 0:
		ev.Token = string(r.raw(r.uv()))
	}
	if ev.Token != "" {
		d.tokens[ev.Client] = ev.Token
	}
}

// decodeFields reads the optional scalar and string fields.
func decodeFields(r *recReader, flags uint64, ev *Event) {
	if flags&fFence != 0 {
		ev.Fence = r.uv()
	}
	if flags&fDepth != 0 {
		ev.Depth = int(unzig(r.uv()))
	}
	if flags&fDeadline != 0 {
		ev.Deadline = ev.T + unzig(r.uv())
	}
	if flags&fValue != 0 {
		ev.Value = unzig(r.uv())
	}
	if flags&fNode != 0 {
		ev.Node = r.str()
	}
	if flags&fErr != 0 {
		ev.Err = r.str()
	}
	if flags&fDetail != 0 {
		ev.Detail = r.str()
	}
}
