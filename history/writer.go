package history

import (
	"bufio"
	"encoding/json"
	"fmt"
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
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	cf     *countingFile
	w      *bufio.Writer
	z      *zstd.Encoder // compact form: the stream under w
	enc    *compactEnc   // compact form: the record encoder
	out    []byte        // compact form: the record being written
	n      int64
	err    error
	done   chan struct{}
	closed bool
	tap    func(*Event) // Tap
	wg     sync.WaitGroup
}

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
	hw := &Writer{f: f, cf: &countingFile{f: f}, done: make(chan struct{})}
	if strings.HasSuffix(path, CompactExt) {
		// SpeedFastest: at full speed the encoder keeps up on one core
		// with room to spare; better levels save little on these records
		// (README "Performance").
		hw.z, err = zstd.NewWriter(hw.cf, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(1<<20))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("create history %s: %w", path, err)
		}
		hw.enc = newCompactEnc()
		hw.w = bufio.NewWriterSize(hw.z, 1<<18)
		hw.w.WriteString(CompactMagic)
	} else {
		hw.w = bufio.NewWriterSize(hw.cf, 1<<20)
	}
	hw.wg.Add(1)
	go hw.flushLoop()
	return hw, nil
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
			hw.flush()
			hw.mu.Unlock()
		}
	}
}

// Append writes one event. The first error is kept and returned by Close.
// The event is encoded before the lock is taken, so concurrent clients only
// serialize on copying bytes into the buffer.
func (hw *Writer) Append(e *Event) {
	if hw.enc != nil {
		// The compact form's deltas and string table are sequential:
		// records are encoded under the lock, in order.
		hw.mu.Lock()
		if !hw.closed {
			if hw.err == nil {
				hw.out = hw.enc.append(hw.out[:0], e)
				_, hw.err = hw.w.Write(hw.out)
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
		if hw.err == nil {
			_, hw.err = hw.w.Write(b)
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

// Flush writes buffered events to the file.
func (hw *Writer) Flush() error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.flush()
	return hw.err
}

// flush (with mu held) writes the buffer through; the compact form ends
// a zstd block, so what is on disk decodes up to here.
func (hw *Writer) flush() {
	if hw.err == nil {
		hw.err = hw.w.Flush()
	}
	if hw.err == nil && hw.z != nil {
		hw.err = hw.z.Flush()
	}
}

// Size is the bytes written to the file so far (after compression).
func (hw *Writer) Size() int64 { return hw.cf.n.Load() }

// Close flushes, syncs and closes the file. It is idempotent.
func (hw *Writer) Close() error {
	hw.mu.Lock()
	if hw.closed {
		hw.mu.Unlock()
		return hw.err
	}
	hw.closed = true
	hw.mu.Unlock()
	close(hw.done)
	hw.wg.Wait()
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if hw.err == nil {
		hw.err = hw.w.Flush()
	}
	if hw.z != nil {
		if err := hw.z.Close(); err != nil && hw.err == nil {
			hw.err = err
		}
	}
	if err := hw.f.Sync(); err != nil && hw.err == nil {
		hw.err = err
	}
	if err := hw.f.Close(); err != nil && hw.err == nil {
		hw.err = err
	}
	return hw.err
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
