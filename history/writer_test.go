package history

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Appenders hand chunks to the writer's drain: with 50 clients appending
// at once past many chunks, every event reaches the file, each client's in
// its order; Flush puts everything appended before it on disk while the
// writer is open; Count counts them all.
func TestWriterConcurrentChunks(t *testing.T) {
	for _, name := range []string{JSONLFile, CompactFile} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name)
			w, err := Create(p)
			if err != nil {
				t.Fatal(err)
			}
			const clients, per = 50, 3000 // several chunks in either form
			tok := func(c, i int) string { return fmt.Sprintf("%016x%016x", c, i) }
			run := func(from, to int) {
				var wg sync.WaitGroup
				for c := range clients {
					wg.Go(func() {
						for i := from; i < to; i++ {
							w.Append(&Event{T: int64(i), End: int64(i + 1), Client: c, Key: keyNames[c], Op: OpAcquire, Result: OK, Token: tok(c, i), Value: int64(i)})
						}
					})
				}
				wg.Wait()
			}
			run(0, per/2)
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			evs, _, err := ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != clients*per/2 {
				t.Fatalf("after Flush the open file holds %d events, want %d", len(evs), clients*per/2)
			}
			run(per/2, per)
			if n := w.Count(); n != clients*per {
				t.Fatalf("Count %d, want %d", n, clients*per)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			w.Append(&Event{Op: OpRead}) // after Close: dropped, no panic
			evs, _, err = ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != clients*per {
				t.Fatalf("%d events in the file, want %d", len(evs), clients*per)
			}
			next := make([]int, clients)
			for _, e := range evs {
				if i := next[e.Client]; e.Value != int64(i) || e.Token != tok(e.Client, i) || e.T != int64(i) {
					t.Fatalf("client %d: event %+v, want its #%d", e.Client, e, i)
				}
				next[e.Client]++
			}
		})
	}
}
