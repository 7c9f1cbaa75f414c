package cluster

import (
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// A latency toxic holding a delayed chunk for a next stage that no longer
// reads (the link's writer left with its connection, or a timeout toxic's
// removal closed the stage after it without relinking) must still end when
// it is removed. Toxiproxy's own waits forever to hand the chunk over, and
// RemoveToxic waits for it under the proxy's toxic lock (a dlv dump of a
// hung exploration run showed 14 such toxics blocked sending, 9 removals
// waiting for them, 16 link teardowns waiting for the lock). The test runs
// both on a bare stub: toxiproxy's is shown to block, boundedLatency to end
// within its hand-off bound.
func TestLatencyToxicEndsWhenNothingReads(t *testing.T) {
	for _, tc := range []struct {
		name  string
		toxic toxics.Toxic
		ends  bool
	}{
		{"toxiproxy latency", &toxics.LatencyToxic{Latency: 10}, false},
		{latencyToxic, &boundedLatency{Latency: 10}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := make(chan *stream.StreamChunk, 2)
			out := make(chan *stream.StreamChunk) // nobody reads it
			stub := toxics.NewToxicStub(in, out)
			running := make(chan struct{})
			go func() {
				defer close(running)
				tc.toxic.Pipe(stub)
			}()
			in <- &stream.StreamChunk{Data: []byte("PING\r\n"), Timestamp: time.Now()}
			time.Sleep(50 * time.Millisecond) // past the latency: blocked handing it on
			interrupted := make(chan struct{})
			go func() {
				stub.Interrupt <- struct{}{} // what RemoveToxic's InterruptToxic sends
				<-running                    // and then waits for
				close(interrupted)
			}()
			select {
			case <-interrupted:
				if !tc.ends {
					t.Fatal("toxiproxy's latency toxic ended: the hang it explains would not happen")
				}
			case <-time.After(handOffWait + 2*time.Second):
				if tc.ends {
					t.Fatal("the removed toxic did not end")
				}
				// Release toxiproxy's goroutine: read what it holds.
				<-out
				<-interrupted
			}
		})
	}
}
