package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

func sample() []Event {
	return []Event{
		{Op: OpRun, Client: -1, Meta: map[string]any{MetaScenario: "gc-pause", MetaTTLms: 200.0, MetaHonours: true}},
		{T: 10, End: 20, Client: 3, Key: "k\"0\n", Op: OpAcquire, Result: OK, Token: "abc", Fence: 7, Depth: 1, Deadline: 99},
		{T: 21, End: 21, Client: 3, Key: "k0", Op: OpRead, Value: -5},
		{T: 22, Client: -1, Op: OpFault, Node: "n1", Fault: &Fault{ID: 1, Kind: "pause-node", Target: "node n1",
			Request: map[string]string{"at": "1s"}, Effect: map[string]string{"state_after": "T"}, Applied: true}},
		{T: 30, End: 31, Client: 3, Key: "k0", Op: OpRelease, Result: Unknown, Err: "i/o timeout: ünïcode ✓"},
	}
}

// AppendJSON must produce what encoding/json produces: the reader decodes it
// with encoding/json, and other tools may too.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, e := range sample() {
		got := AppendJSON(nil, &e)
		var back, want Event
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("AppendJSON produced invalid JSON %s: %v", got, err)
		}
		std, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, want) {
			t.Errorf("round trip differs:\n got %+v\nwant %+v\n(json %s)", back, want, got)
		}
	}
}

func TestWriterReaderRoundTripConcurrent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				w.Append(&Event{T: int64(i), Client: g, Key: "k", Op: OpWrite, Value: int64(i)})
			}
		}(g)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, info, err := ReadFile(p)
	if err != nil || info.Torn || len(evs) != 8000 {
		t.Fatalf("read %d events (torn %v, err %v), want 8000", len(evs), info.Torn, err)
	}
	last := map[int]int64{}
	for _, e := range evs {
		if v, ok := last[e.Client]; ok && e.Value != v+1 {
			t.Fatalf("client %d: value %d after %d: one writer's events out of order", e.Client, e.Value, v)
		}
		last[e.Client] = e.Value
	}
}

func TestTornLastLineIsSkippedMalformedLineNamed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "torn.jsonl")
	body := `{"t":0,"client":-1,"op":"run"}` + "\n" + `{"t":1,"client":0,"op":"acquire","res`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, info, err := ReadFile(p)
	if err != nil || !info.Torn || len(evs) != 1 {
		t.Fatalf("torn file: %d events, torn %v, err %v; want 1, true, nil", len(evs), info.Torn, err)
	}
	p2 := filepath.Join(dir, "bad.jsonl")
	body = `{"t":0,"client":-1,"op":"run"}` + "\n" + `{"t":1,"client":0,` + "\n" + `{"t":2,"client":0,"op":"read"}` + "\n"
	if err := os.WriteFile(p2, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = ReadFile(p2)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("malformed line 2: err %v, want it named", err)
	}
	if _, err := RunMeta(p2); err != nil {
		t.Fatalf("RunMeta reads only the first line: %v", err)
	}
}

// BenchmarkAppend is the cost of recording one event (the hot path of every
// client step).
func BenchmarkAppend(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "h.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	e := &Event{T: 123456789, End: 123459999, Client: 7, Key: "k42", Op: OpAcquire, Result: OK,
		Token: "0123456789abcdef0123456789abcdef", Depth: 1, Deadline: 623456789}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Append(e)
		}
	})
}

// BenchmarkScan is the cost of reading one event back (checker, report).
func BenchmarkScan(b *testing.B) {
	p := filepath.Join(b.TempDir(), "h.jsonl")
	w, _ := Create(p)
	e := &Event{T: 123456789, End: 123459999, Client: 7, Key: "k42", Op: OpAcquire, Result: OK,
		Token: "0123456789abcdef0123456789abcdef", Depth: 1, Deadline: 623456789}
	for i := 0; i < 100000; i++ {
		w.Append(e)
	}
	_ = w.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ScanFile(p, func(*Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*100000/b.Elapsed().Seconds(), "events/s")
}

// Every fault kind has a known family; the families list has no stray entry.
func TestFaultTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range FaultKinds {
		if seen[k] {
			t.Errorf("fault kind %s listed twice", k)
		}
		seen[k] = true
		if !slices.Contains(FaultFamilies, FaultFamily(k)) {
			t.Errorf("fault kind %s: family %q is not in FaultFamilies", k, FaultFamily(k))
		}
	}
	if !ClientFault(FaultPauseClient) || ClientFault(FaultKillNode) || ClientFault("no-such-kind") {
		t.Error("ClientFault: pause-client aims at a client, kill-node does not, an unknown kind does not")
	}
}

func TestLeadingTimes(t *testing.T) {
	for _, tc := range []struct {
		line   string
		t, end int64
		ok     bool
	}{
		{`{"t":123,"end":456,"client":1,"op":"acquire"}`, 123, 456, true},
		{`{"t":-5,"client":-1,"op":"phase"}`, -5, 0, true},
		{`{"client":1,"t":123}`, 0, 0, false},
		{`{"t":x}`, 0, 0, false},
	} {
		tt, end, ok := LeadingTimes([]byte(tc.line))
		if tt != tc.t || end != tc.end || ok != tc.ok {
			t.Errorf("LeadingTimes(%s) = %d, %d, %v", tc.line, tt, end, ok)
		}
	}
}

// ScanWindow skips events that ended before the window without decoding
// them and stops after it; what it passes on is what Scan would.
func TestScanWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	lines := `{"t":10,"end":20,"client":1,"op":"acquire"}
{"t":30,"end":200,"client":2,"op":"acquire"}
{"t":50,"client":3,"op":"write"}
{"t":120,"client":4,"op":"write"}
{"t":300,"client":5,"op":"write"}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []int
	if _, err := ScanWindow(path, 100, 150, func(e *Event) error { got = append(got, e.Client); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{2, 4}) {
		t.Errorf("clients seen = %v, want [2 4] (1 and 3 ended before 100, 5 starts after 150)", got)
	}
}
