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
//	cmd    conn string, name string, uvarint n + n strings (args),
//	       uvarint m + m × (uvarint n + n strings) (inner)   (fCmd)
//
// Version 3 ("LCH\x03") added fCmd; a version-2 stream (no command
// records) reads the same way.
// A string is a uvarint: 0 = a literal follows (uvarint length, bytes), 1 =
// a literal follows and takes the next table slot, n ≥ 2 = table slot n-2.
// The table holds at most compactTableMax strings.

// CompactMagic starts the decompressed stream of a compact history.
const CompactMagic = "LCH\x03"

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
	prevT  int64
	table  map[string]uint64
	tokens []string // by client+1 (client ≥ -1): a slice, not a map, as two events a lock cycle look it up
	other  map[int]*string
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
		r = c.strs(r, e.Cmd.Args)
		r = binary.AppendUvarint(r, uint64(len(e.Cmd.Inner)))
		for _, in := range e.Cmd.Inner {
			r = c.strs(r, in)
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
	// Events are written as they complete: the later of t and end grows
	// by small steps from one record to the next, while t alone jumps
	// back by an acquire's wait.
	stamp := e.T
	if flags&fEnd != 0 {
		stamp = max(e.T, e.End)
	}
	r = binary.AppendVarint(r, stamp-c.prevT)
	c.prevT = stamp
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

// strs appends a command's arguments: their count, then each interned up
// to cmdInternMax bytes (a script's body repeats with every EVAL).
func (c *compactEnc) strs(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		if _, ok := c.table[s]; !ok && len(s) > 256 && len(s) <= cmdInternMax && len(c.table) < compactTableMax {
			c.table[s] = uint64(len(c.table))
			b = appendBytes(binary.AppendUvarint(b, 1), s)
			continue
		}
		b = c.str(b, s)
	}
	return b
}

// cmdInternMax is the longest command argument the string table takes.
const cmdInternMax = 8192

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
	r      *bufio.Reader
	prevT  int64
	table  []string
	tokens map[int]string
	buf    []byte
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
		ev.Cmd = r.command()
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

// command reads a recorded command: its connection, name, arguments and a
// MULTI's or script's inner commands.
func (r *recReader) command() *Command {
	c := &Command{Conn: r.str(), Name: r.str()}
	c.Args = r.strs()
	if n := r.count(); n > 0 {
		c.Inner = make([][]string, n)
		for i := range c.Inner {
			c.Inner[i] = r.strs()
		}
	}
	return c
}

// decodeHead reads the fields every record starts with: op, time (a delta
// from the previous record's), client, end, key, result and token (the
// client's previous one, 16 bytes of hex, or raw).
func (d *compactDec) decodeHead(r *recReader, flags uint64, ev *Event) {
	ev.Op = Op(r.str())
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
