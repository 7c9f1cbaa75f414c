package history

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/lockchaos/lockchaos/internal/cputime"
)

// compactSample is a history with every field and the edge cases of the
// compact form: negative and decreasing times, a token repeated by its
// client, a non-hex and an upper-case token, strings past the table's
// literal limit, faults and meta, escapes.
func compactSample() []Event {
	long := string(make([]byte, 300))
	evs := []Event{
		{T: 0, Client: -1, Op: OpRun, Meta: map[string]any{"scenario": "s", "ttl_ms": 500.0, "faults_scheduled": []any{map[string]any{"id": 1.0}}}},
		{T: 10, End: 90, Client: 3, Key: "k1", Op: OpAcquire, Result: OK, Token: "0123456789abcdef0123456789abcdef", Fence: 7, Depth: 1, Deadline: 500_000_090},
		{T: 95, End: 95, Client: 3, Key: "k1", Op: OpRead, Value: -4},
		{T: 96, End: 120, Client: 3, Key: "k1", Op: OpWrite, Result: OK, Value: 5, Fence: 7},
		{T: 130, End: 160, Client: 3, Key: "k1", Op: OpRelease, Result: OK, Token: "0123456789abcdef0123456789abcdef"},
		{T: 50, End: 400, Client: 4, Key: "k1", Op: OpAcquire, Result: Fail, Err: "redis: nil\n\"quoted\" ünïcode \u2028"},
		{T: -5, Client: -1, Op: OpPhase, Detail: "workload"},
		{T: 200, End: 260, Client: 5, Key: "k2", Op: OpAcquire, Result: Unknown, Token: "ABCDEF0123456789ABCDEF0123456789"},
		{T: 210, Client: 6, Key: "k2", Op: OpAcquire, Result: OK, Token: "tok-not-hex", Detail: long},
		{T: 300, End: 900, Client: -1, Node: "n1", Op: OpFault, Fault: &Fault{ID: 2, Kind: FaultFailover, Target: "master",
			Request: map[string]string{ParamMode: "kill"}, Effect: map[string]string{EffectNewMaster: "n2"}, Applied: true}},
		{T: 901, Client: -1, Node: "n2", Key: "k1", Op: OpServer, Detail: "expired"},
		{T: 1 << 40, End: 1<<40 + 1, Client: 1 << 20, Key: "k1", Op: OpRenew, Result: OK, Token: "0123456789abcdef0123456789abcdef"},
		{T: 1<<40 + 5, Client: 3, Node: "n1", Key: "k1", Op: OpCommand, Cmd: &Command{Conn: "127.0.0.1:55210", Name: "lc-r-c3",
			Args: []string{"SET", "lc:r:k1", "0123456789abcdef0123456789abcdef", "NX", "PX", "500"}}},
		{T: 1<<40 + 6, Client: 3, Node: "n1", Key: "k1", Op: OpCommand, Cmd: &Command{Conn: "127.0.0.1:55210", Name: "lc-r-c3",
			Args: []string{"EVAL", long + "script", "1", "lc:r:k1", "tok"}, Inner: [][]string{{"GET", "lc:r:k1"}, {"DEL", "lc:r:k1"}}}},
		{T: 1<<40 + 7, Client: 3, Node: "n1", Key: "k1", Op: OpCommand, Cmd: &Command{Conn: "127.0.0.1:55210", Name: "lc-r-c3",
			Args: []string{"EVAL", long + "script", "1", "lc:r:k1", "tok"}, Inner: [][]string{{"GET", "lc:r:k1"}}}},
		{T: 1<<40 + 8, Client: -1, Node: "n2", Op: OpCommand, Detail: CmdGap, Err: "EOF"},
		// Each client's previous token is its own (the encoder keeps them
		// in a slice by id, and in a map for other ids).
		{T: 1<<40 + 9, Client: -2, Key: "k1", Op: OpRelease, Result: OK, Token: "0123456789abcdef0123456789abcdef"},
		{T: 1<<40 + 10, Client: -1, Key: "k1", Op: OpRelease, Result: OK, Token: "fedcba9876543210fedcba9876543210"},
		{T: 1<<40 + 11, Client: -2, Key: "k1", Op: OpRelease, Result: OK, Token: "fedcba9876543210fedcba9876543210"},
		{T: 1<<40 + 12, Client: 1 << 20, Key: "k1", Op: OpRelease, Result: OK, Token: "0123456789abcdef0123456789abcdef"},
		{T: 1<<40 + 13, Client: 3, Key: "k1", Op: OpRelease, Result: OK, Token: "0123456789abcdef0123456789abcdef"},
		{T: 1<<40 + 14, Client: 4096, Key: "k1", Op: OpRelease, Result: OK, Token: "fedcba9876543210fedcba9876543210"},
	}
	return evs
}

func writeCompact(t testing.TB, path string, evs []Event) {
	t.Helper()
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		w.Append(&evs[i])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// The compact form reads back exactly the events written, as the JSONL
// form does.
func TestCompactRoundTrip(t *testing.T) {
	dir := t.TempDir()
	evs := compactSample()
	for _, name := range []string{JSONLFile, CompactFile} {
		p := filepath.Join(dir, name)
		writeCompact(t, p, evs)
		got, info, err := ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if info.Torn || len(got) != len(evs) {
			t.Fatalf("%s: %d events (torn %v), want %d", name, len(got), info.Torn, len(evs))
		}
		for i := range evs {
			if !reflect.DeepEqual(got[i], evs[i]) {
				t.Errorf("%s event %d:\n got %+v\nwant %+v", name, i, got[i], evs[i])
			}
		}
	}
	if FileIn(dir) != filepath.Join(dir, CompactFile) {
		t.Errorf("FileIn prefers the compact history, got %s", FileIn(dir))
	}
}

// A compact history cut anywhere (a killed run) reads as a prefix of its
// events, marked torn, never as an error; the blocks flushed before the
// cut are all there.
func TestCompactTornTail(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, CompactFile)
	r := rand.New(rand.NewPCG(1, 2))
	var evs []Event
	w, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		e := Event{T: int64(i) * 1000, End: int64(i)*1000 + r.Int64N(900), Client: r.IntN(20), Key: fmt.Sprintf("k%d", r.IntN(50)),
			Op: OpAcquire, Result: OK, Token: fmt.Sprintf("%032x", r.Uint64())}
		evs = append(evs, e)
		w.Append(&e)
		if i%500 == 499 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	flushedAt := w.Size() // after the 6th flush: 3000 events decodable
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int64{int64(len(full)) - 1, int64(len(full)) - 7, flushedAt / 2, 10, 3} {
		tp := filepath.Join(dir, fmt.Sprintf("cut-%d.lch", cut))
		if err := os.WriteFile(tp, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		got, info, err := ReadFile(tp)
		if err != nil {
			t.Errorf("cut at %d of %d: %v", cut, len(full), err)
			continue
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], evs[i]) {
				t.Fatalf("cut at %d: event %d differs", cut, i)
			}
		}
		if cut >= flushedAt && len(got) < 3000 {
			t.Errorf("cut at %d (after the last flush at %d): %d events, want all 3000", cut, flushedAt, len(got))
		}
		if cut < int64(len(full)) && cut > flushedAt && !info.Torn && len(got) < 3000 {
			t.Errorf("cut at %d: %d events and not marked torn", cut, len(got))
		}
	}
}

// A compact history of version 2 (before the command record) still reads.
func TestReadsCompactV2(t *testing.T) {
	dir := t.TempDir()
	var evs []Event
	for _, e := range compactSample() {
		if e.Cmd == nil {
			evs = append(evs, e)
		}
	}
	p := filepath.Join(dir, CompactFile)
	writeCompact(t, p, evs)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// A decoder for DecodeAll only (nil source): one made on a reader
	// starts decoding that stream in the background, and on a loaded
	// machine it held the decoder DecodeAll waits for (a hang in CI).
	zr, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := zr.DecodeAll(raw, nil)
	zr.Close()
	if err != nil || !bytes.HasPrefix(plain, []byte(CompactMagic)) {
		t.Fatalf("decode: %v, head %q", err, plain[:min(4, len(plain))])
	}
	copy(plain, compactMagicV2)
	zw, _ := zstd.NewWriter(nil)
	v2 := zw.EncodeAll(plain, nil)
	_ = zw.Close()
	if err := os.WriteFile(p, v2, 0o644); err != nil {
		t.Fatal(err)
	}
	got, info, err := ReadFile(p)
	if err != nil || info.Torn || !reflect.DeepEqual(got, evs) {
		t.Fatalf("v2 history: err %v, torn %v, %d events of %d", err, info.Torn, len(got), len(evs))
	}
}

// A version-3 history (testdata/v3.lch: compactSample, written by the
// writer of e3be43a, before commands' arguments were stored as version 4
// does) still reads.
func TestCompactReadsV3(t *testing.T) {
	got, info, err := ReadFile(filepath.Join("testdata", "v3.lch"))
	if err != nil || info.Torn || !reflect.DeepEqual(got, compactSample()) {
		t.Fatalf("v3 history: err %v, torn %v, %d events of %d", err, info.Torn, len(got), len(compactSample()))
	}
}

// recordEvents is a contention run's history with its command record: per
// cycle an acquire, its SET NX (before or after it, as the record's
// goroutine and the client race), a failed attempt's SET NX now and then,
// the release and its script (EVALSHA, or EVAL with the body), on a node
// whose times are whole microseconds.
func recordEvents(n int) []Event {
	r := rand.New(rand.NewPCG(3, 4))
	body := strings.Repeat("-- compare and delete\n", 12) + "return 0\n"
	var evs []Event
	var t int64
	for len(evs) < n {
		c := r.IntN(50)
		key := keyNames[c%len(keyNames)]
		full := "lc:2f582335:{" + key + "}"
		conn := fmt.Sprintf("127.0.0.1:%d", 40000+c)
		name := fmt.Sprintf("lc-2f582335-c%d", c)
		tok := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
		t += 1000 + r.Int64N(20000)
		srv := t/1000*1000 + 123
		cmd := func(args []string, inner ...[]string) Event {
			return Event{T: srv, Client: c, Key: key, Op: OpCommand, Node: "n1", Cmd: &Command{Conn: conn, Name: name, Args: args, Inner: inner}}
		}
		set := cmd([]string{"set", full, tok, "px", "500", "nx"})
		acq := Event{T: t - 200_000, End: t, Client: c, Key: key, Op: OpAcquire, Result: OK, Token: tok, Depth: 1, Deadline: t + 490_000_000}
		if r.IntN(2) == 0 {
			evs = append(evs, set, acq)
		} else {
			evs = append(evs, acq, set)
		}
		if r.IntN(5) == 0 {
			evs = append(evs, cmd([]string{"set", full, fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()), "px", "500", "nx"}))
		}
		t += 300_000
		srv += 250_000
		rel := cmd([]string{"evalsha", "ba7d080aad9d06f0b74db2ac05e42e5263ff478d", "2", full, "lockchaos:released:" + full, tok},
			[]string{"GET", full}, []string{"DEL", full}, []string{"PUBLISH", "lockchaos:released:" + full, "1"})
		if r.IntN(3) == 0 {
			rel.Cmd.Args[0], rel.Cmd.Args[1] = "eval", body
		}
		evs = append(evs, rel, Event{T: t - 100_000, End: t, Client: c, Key: key, Op: OpRelease, Result: OK, Token: tok})
	}
	return evs
}

// The command record reads back exactly, and stores a cycle's token once:
// a command's token is its client's last one, or its bytes.
func TestCompactCommands(t *testing.T) {
	evs := recordEvents(20000)
	p := compactRoundTrip(t, evs)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// A new token's 16 random bytes, which nothing compresses, come
	// with a cycle's four events and now and then a failed attempt's:
	// about 4.5 bytes an event; the rest is small.
	perEvent := float64(st.Size()) / float64(len(evs))
	t.Logf("%.1f bytes an event", perEvent)
	if perEvent > 12 {
		t.Errorf("%.1f bytes an event, want at most 12", perEvent)
	}
}

// Histories written by the JSONL writer of earlier releases still read
// (testdata/v1.jsonl was written by 97ea0bb).
func TestReadsPreviousFormat(t *testing.T) {
	evs, info, err := ReadFile(filepath.Join("testdata", "v1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Torn || len(evs) < 10 || evs[0].Op != OpRun {
		t.Fatalf("%d events, torn %v, first %+v", len(evs), info.Torn, evs[0])
	}
}

// contentionEvents is a contention-shaped stream of n events (acquire,
// read, write, release per cycle of 50 clients), made before a benchmark
// times the writer.
func contentionEvents(n int) []Event {
	r := rand.New(rand.NewPCG(1, 2))
	var t int64
	evs := make([]Event, n)
	for i := range evs {
		c := i / 4 % 50
		key := keyNames[c]
		t += 2000 + r.Int64N(30000)
		switch i % 4 {
		case 0:
			evs[i] = Event{T: t - 9_000_000, End: t, Client: c, Key: key, Op: OpAcquire, Result: OK,
				Token: fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()), Depth: 1, Deadline: t + 490_000_000}
		case 1:
			evs[i] = Event{T: t, End: t, Client: c, Key: key, Op: OpRead}
		case 2:
			evs[i] = Event{T: t, End: t + 60_000, Client: c, Key: key, Op: OpWrite, Result: OK, Value: 1}
		case 3:
			evs[i] = Event{T: t, End: t + 80_000, Client: c, Key: key, Op: OpRelease, Result: OK, Token: "x"}
		}
	}
	return evs
}

// BenchmarkCompactAppend: the writer's cost and size per event on a
// contention-shaped stream, from one goroutine and from 50 at once (a
// bench's clients). ns/op is what an appender waits; cpu-ns/event is the
// whole process's CPU per event up to the closed file, the drain's
// compression and writes included: on two cores shared with redis-server
// that CPU is taken from the clients (issue 27).
func BenchmarkCompactAppend(b *testing.B) {
	evs := contentionEvents(1 << 16)
	for _, name := range []string{JSONLFile, CompactFile} {
		for _, par := range []int{1, 50} {
			b.Run(fmt.Sprintf("%s/appenders=%d", name, par), func(b *testing.B) {
				p := filepath.Join(b.TempDir(), name)
				w, err := Create(p)
				if err != nil {
					b.Fatal(err)
				}
				cpu0 := cputime.Process()
				b.ResetTimer()
				if par == 1 {
					for i := 0; i < b.N; i++ {
						w.Append(&evs[i%len(evs)])
					}
				} else {
					var next atomic.Int64
					var wg sync.WaitGroup
					for range par {
						wg.Go(func() {
							for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
								w.Append(&evs[i%int64(len(evs))])
							}
						})
					}
					wg.Wait()
				}
				b.StopTimer()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/event")
				st, _ := os.Stat(p)
				b.ReportMetric(float64(st.Size())/float64(b.N), "bytes/event")
			})
		}
	}
}

var keyNames = func() []string {
	k := make([]string, 50)
	for i := range k {
		k[i] = fmt.Sprintf("k%d", i)
	}
	return k
}()

// BenchmarkCompactScan is the cost of reading one event of the compact
// form back (the checker's decoder), on a contention-shaped stream.
func BenchmarkCompactScan(b *testing.B) {
	evs := contentionEvents(1 << 16)
	p := filepath.Join(b.TempDir(), CompactFile)
	w, err := Create(p)
	if err != nil {
		b.Fatal(err)
	}
	for i := range evs {
		w.Append(&evs[i])
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ScanFile(p, func(*Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(evs))/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkCompactDecode is the decoder alone: records already in memory
// (no file, no decompression).
func BenchmarkCompactDecode(b *testing.B) {
	evs := contentionEvents(1 << 16)
	enc := newCompactEnc()
	var buf []byte
	for i := range evs {
		buf = enc.append(buf, &evs[i])
	}
	b.ResetTimer()
	var ev Event
	for i := 0; i < b.N; i++ {
		d := &compactDec{tokens: map[int]string{}, v4: true}
		for p := 0; p < len(buf); {
			n, k := binary.Uvarint(buf[p:])
			p += k
			if err := d.decode(buf[p:p+int(n)], &ev); err != nil {
				b.Fatal(err)
			}
			p += int(n)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(evs))/b.Elapsed().Seconds(), "events/s")
}

// A record is written behind a one-byte length and moved up when it is 128
// bytes or more: records on either side of each length's bound read back,
// and so do the records after them, and keys that share the encoder's cache
// slot keep their own table entries.
func TestCompactRecordLengths(t *testing.T) {
	var evs []Event
	for n := 100; n <= 150; n++ { // the record's length crosses 127
		evs = append(evs, Event{T: int64(n), Client: 1, Op: OpPhase, Detail: strings.Repeat("d", n)})
		evs = append(evs, Event{T: int64(n), Client: 2, Op: OpAcquire, Key: "k1", Result: OK})
	}
	evs = append(evs, Event{T: 200, Client: 1, Op: OpPhase, Detail: strings.Repeat("x", 20000)}) // a three-byte length
	for _, k := range []string{"k01", "k11", "k01", "k21", "k11"} {                              // one cache slot: same length and end bytes
		evs = append(evs, Event{T: 300, Client: 3, Op: OpAcquire, Key: k, Result: OK}, Event{T: 301, Client: 3, Op: OpRelease, Key: k, Result: OK})
	}
	compactRoundTrip(t, evs)
}

// compactRoundTrip writes evs in the compact form, fails t unless they
// read back the same, and returns the file's path.
func compactRoundTrip(t *testing.T, evs []Event) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), CompactFile)
	writeCompact(t, p, evs)
	got, info, err := ReadFile(p)
	if err != nil || info.Torn || len(got) != len(evs) {
		t.Fatalf("%d events (torn %v, %v), want %d", len(got), info.Torn, err, len(evs))
	}
	for i := range evs {
		if !reflect.DeepEqual(got[i], evs[i]) {
			t.Fatalf("event %d:\n got %+v %+v\nwant %+v %+v", i, got[i], got[i].Cmd, evs[i], evs[i].Cmd)
		}
	}
	return p
}
