package history

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// Writer appends events to a JSONL file. It is safe for concurrent use.
//
// Events are buffered and flushed at least every FlushEvery, so a run that is
// killed leaves a readable prefix (the reader skips a torn last line) at the
// cost of at most FlushEvery of events. Close flushes and syncs.
//
// A path ending in CompactExt gets the compact form (compact.go): the same
// events, about a tenth of the bytes.
//
// Appenders only encode an event into the current chunk under the lock.
// Compression and file writes happen in a goroutine of the writer's own
// (drain), which takes full chunks in order: with 50 clients on two cores,
// compressing a chunk or writing the file under the lock every client takes
// for every event made them queue behind it (issue 27: a fifth of the bench's
// throughput). A drain that falls behind holds appenders back (at most
// chunkQueue chunks wait), so no event is ever dropped.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	cf     *countingFile
	sink   io.Writer     // where the drain writes chunks: z, or the file
	z      *zstd.Encoder // compact form: the stream the drain writes
	enc    *compactEnc   // compact form: the record encoder
	buf    []byte        // records since the last hand-off (under mu)
	chunk  int           // hand buf off at this size
	dirty  bool          // handed off since the last flush (under mu)
	q      chan chunk    // to the drain, in file order
	spare  chan []byte   // emptied chunks, for reuse
	n      int64
	done   chan struct{}
	closed bool
	tap    func(*Event) // Tap
	wg     sync.WaitGroup

	errMu  sync.Mutex // not mu: the drain sets it while an appender may hold mu waiting for the queue
	err    error
	failed atomic.Bool
}

// chunk is a run of encoded events on its way to the file; flush ends a
// zstd block and reaches the file after it; ack, when set, hears the first
// error once the chunk is written.
type chunk struct {
	b     []byte
	flush bool
	ack   chan error
}

const (
	chunkCompact = 128 << 10 // a hand-off to the drain: about 7k compact events
	chunkJSONL   = 1 << 20   // JSONL: one write syscall a MiB, as its old buffer
	chunkQueue   = 8         // chunks waiting for the drain before appenders wait
)

// File names of a run's history, in its two forms.
const (
	JSONLFile   = "history.jsonl"
	CompactFile = "history.lch"
	CompactExt  = ".lch"
)

// FileIn is the history file of run directory dir: the compact one when it
// is there, else history.jsonl.
func FileIn(dir string) string {
	if p := filepath.Join(dir, CompactFile); fileExists(p) {
		return p
	}
	return filepath.Join(dir, JSONLFile)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// countingFile counts the bytes written to the file (Writer.Size).
type countingFile struct {
	f *os.File
	n atomic.Int64
}

func (c *countingFile) Write(b []byte) (int, error) {
	n, err := c.f.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// FlushEvery bounds how much history a killed run can lose.
const FlushEvery = 100 * time.Millisecond

// Create opens path for writing (truncating it) and starts the periodic flush.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create history %s: %w", path, err)
	}
	hw := &Writer{f: f, cf: &countingFile{f: f}, done: make(chan struct{}),
		q: make(chan chunk, chunkQueue), spare: make(chan []byte, chunkQueue+2)}
	hw.sink, hw.chunk = hw.cf, chunkJSONL
	if strings.HasSuffix(path, CompactExt) {
		// SpeedFastest, compressed by the drain (one encoder goroutine,
		// off the appenders' lock). The records are already compact, so
		// zstd only takes a quarter off them at any level, and its CPU
		// comes out of the clients' two cores: in a bench
		// (simple, 50 clients, per-client keys) the drain cost 1.2-1.8
		// µs a lock cycle with SpeedDefault (its 1 MB+ match tables,
		// evicted between chunks by the clients' work) and 0.4-0.8 µs
		// with SpeedFastest, for a file 5% larger (a bench history of
		// 522k events: 8.95 MB of records to 6.53 MB with SpeedDefault,
		// 6.90 MB with SpeedFastest). SpeedBetterCompression was four
		// times SpeedDefault's cost (issue 27).
		// No entropy coding of literals: they are the tokens' random
		// bytes, which Huffman coding cannot shrink; the attempt cost 15% of
		// the writer's CPU (BenchmarkCompactAppend: 120 -> 101 CPU-ns an
		// event), and a bench history of 13.3 MB of records came out at
		// 10.30 MB either way.
		hw.z, err = zstd.NewWriter(hw.cf, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(1<<20), zstd.WithNoEntropyCompression(true))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("create history %s: %w", path, err)
		}
		hw.sink, hw.chunk = hw.z, chunkCompact
		hw.enc = newCompactEnc()
		hw.buf = append(hw.buf, CompactMagic...)
	}
	hw.buf = append(make([]byte, 0, hw.chunk+4<<10), hw.buf...)
	hw.wg.Add(2)
	go hw.drain()
	go hw.flushLoop()
	return hw, nil
}

// drain writes the chunks in order, and is the only user of sink.
func (hw *Writer) drain() {
	defer hw.wg.Done()
	for c := range hw.q {
		if !hw.failed.Load() {
			var err error
			if len(c.b) > 0 {
				_, err = hw.sink.Write(c.b)
			}
			if err == nil && c.flush && hw.z != nil {
				err = hw.z.Flush()
			}
			if err != nil {
				hw.fail(err)
			}
		}
		if cap(c.b) > 0 {
			select {
			case hw.spare <- c.b[:0]:
			default:
			}
		}
		if c.ack != nil {
			c.ack <- hw.firstErr()
		}
	}
}

// handOff (with mu held) queues the current chunk for the drain and starts
// a new one. It waits only when chunkQueue chunks are already queued.
func (hw *Writer) handOff(flush bool, ack chan error) {
	c := chunk{b: hw.buf, flush: flush && (hw.dirty || len(hw.buf) > 0), ack: ack}
	if flush {
		hw.dirty = false
	} else if len(hw.buf) > 0 {
		hw.dirty = true
	}
	if len(hw.buf) == 0 {
		c.b = nil
		if !c.flush && ack == nil {
			return
		}
	} else {
		select {
		case b := <-hw.spare:
			hw.buf = b
		default:
			hw.buf = make([]byte, 0, hw.chunk+4<<10)
		}
	}
	hw.q <- c
}

func (hw *Writer) fail(err error) {
	hw.errMu.Lock()
	if hw.err == nil {
		hw.err = err
	}
	hw.errMu.Unlock()
	hw.failed.Store(true)
}

func (hw *Writer) firstErr() error {
	hw.errMu.Lock()
	defer hw.errMu.Unlock()
	return hw.err
}

func (hw *Writer) flushLoop() {
	defer hw.wg.Done()
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-hw.done:
			return
		case <-t.C:
			hw.mu.Lock()
			if !hw.closed {
				hw.handOff(true, nil)
			}
			hw.mu.Unlock()
		}
	}
}

// Append writes one event. The first error is kept and returned by Close.
// A JSONL event is encoded before the lock is taken; a compact one under
// it (its deltas and string table are sequential). Either is then only
// copied into the current chunk: compression and the file write are the
// drain's.
func (hw *Writer) Append(e *Event) {
	if hw.enc != nil {
		hw.mu.Lock()
		if !hw.closed {
			if !hw.failed.Load() {
				hw.buf = hw.enc.append(hw.buf, e)
				if len(hw.buf) >= hw.chunk {
					hw.handOff(false, nil)
				}
			}
			hw.n++
			if hw.tap != nil {
				hw.tap(e)
			}
		}
		hw.mu.Unlock()
		return
	}
	bp := encBufs.Get().(*[]byte)
	b := append(AppendJSON((*bp)[:0], e), '\n')
	hw.mu.Lock()
	if !hw.closed {
		if !hw.failed.Load() {
			hw.buf = append(hw.buf, b...)
			if len(hw.buf) >= hw.chunk {
				hw.handOff(false, nil)
			}
		}
		hw.n++
		if hw.tap != nil {
			hw.tap(e)
		}
	}
	hw.mu.Unlock()
	if cap(b) <= 64<<10 { // a huge event (meta) is not kept for reuse
		*bp = b
		encBufs.Put(bp)
	}
}

// encBufs are encoding buffers for Append.
var encBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Tap makes fn see every event appended from now on, in the file's order,
// under the writer's lock (fn must be quick and must copy what it keeps:
// the live checker, checker.LiveChecker). Call it before the first Append;
// Tap(nil) detaches fn (no call of it is under way once Tap returns).
func (hw *Writer) Tap(fn func(*Event)) {
	hw.mu.Lock()
	hw.tap = fn
	hw.mu.Unlock()
}

// Count is the number of events appended so far.
func (hw *Writer) Count() int64 {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return hw.n
}

// Flush writes every event appended so far to the file (the compact form
// ends a zstd block, so what is on disk decodes up to here), and returns
// the first error.
func (hw *Writer) Flush() error {
	hw.mu.Lock()
	if hw.closed {
		hw.mu.Unlock()
		return hw.firstErr()
	}
	ack := make(chan error, 1)
	hw.handOff(true, ack)
	hw.mu.Unlock()
	return <-ack
}

// Size is the bytes written to the file so far (after compression).
func (hw *Writer) Size() int64 { return hw.cf.n.Load() }

// Close flushes, syncs and closes the file. It is idempotent.
func (hw *Writer) Close() error {
	hw.mu.Lock()
	if hw.closed {
		hw.mu.Unlock()
		return hw.firstErr()
	}
	hw.closed = true
	hw.handOff(false, nil)
	close(hw.q) // no hand-off after closed
	hw.mu.Unlock()
	close(hw.done)
	hw.wg.Wait()
	if hw.z != nil {
		if err := hw.z.Close(); err != nil {
			hw.fail(err)
		}
	}
	if err := hw.f.Sync(); err != nil {
		hw.fail(err)
	}
	if err := hw.f.Close(); err != nil {
		hw.fail(err)
	}
	return hw.firstErr()
}

// AppendJSON appends e as one JSON object (no newline) to b. It produces the
// same document as encoding/json with the struct tags of Event, several times
// faster, because the hot fields are written by hand.
func AppendJSON(b []byte, e *Event) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, e.T, 10)
	if e.End != 0 {
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, e.End, 10)
	}
	b = append(b, `,"client":`...)
	b = strconv.AppendInt(b, int64(e.Client), 10)
	b = appendStrField(b, "key", e.Key)
	b = appendStrField(b, "op", string(e.Op))
	b = appendStrField(b, "result", string(e.Result))
	b = appendStrField(b, "token", e.Token)
	if e.Fence != 0 {
		b = append(b, `,"fence":`...)
		b = strconv.AppendUint(b, e.Fence, 10)
	}
	if e.Depth != 0 {
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(e.Depth), 10)
	}
	if e.Deadline != 0 {
		b = append(b, `,"deadline":`...)
		b = strconv.AppendInt(b, e.Deadline, 10)
	}
	if e.Value != 0 {
		b = append(b, `,"value":`...)
		b = strconv.AppendInt(b, e.Value, 10)
	}
	b = appendStrField(b, "node", e.Node)
	b = appendStrField(b, "err", e.Err)
	b = appendStrField(b, "detail", e.Detail)
	if e.Fault != nil {
		b = append(b, `,"fault":`...)
		b = appendMarshal(b, e.Fault)
	}
	if e.Cmd != nil {
		b = append(b, `,"cmd":`...)
		b = appendMarshal(b, e.Cmd)
	}
	if len(e.Meta) != 0 {
		b = append(b, `,"meta":`...)
		b = appendMarshal(b, e.Meta)
	}
	return append(b, '}')
}

func appendMarshal(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		return strconv.AppendQuote(b, "unencodable: "+err.Error())
	}
	return append(b, j...)
}

func appendStrField(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return AppendString(b, v)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
