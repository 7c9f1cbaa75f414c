package cluster

import (
	"math/rand/v2"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// boundedLatency is toxiproxy's latency toxic (each chunk waits latency ±
// jitter ms) with its hand-offs bounded. Toxiproxy's own sends a chunk to
// the next stage without watching for its removal, and on removal sends it
// again without a bound: when the link's writer is gone (its connection
// closed under it) that send never ends, and RemoveToxic, waiting for it
// while it holds the proxy's toxic lock, hangs the heal and every later
// change of that proxy (Shopify/toxiproxy#412, #558; an exploration's run
// hung in HealAll on a latency fault this way).
type boundedLatency struct {
	Latency int64 `json:"latency"`
	Jitter  int64 `json:"jitter"`
}

// latencyToxic is boundedLatency's toxiproxy type name.
const latencyToxic = "lc_latency"

// handOffWait bounds a removed toxic's hand-off of the chunk it holds: a
// next stage that has not read it by then is gone with its connection.
const handOffWait = time.Second

func init() { toxics.Register(latencyToxic, new(boundedLatency)) }

func (t *boundedLatency) delay() time.Duration {
	d := t.Latency
	if t.Jitter > 0 {
		d += rand.Int64N(2*t.Jitter) - t.Jitter
	}
	return time.Duration(d) * time.Millisecond
}

// Pipe delays each chunk; interrupted (the toxic removed or replaced), it
// hands the chunk it holds on and returns.
func (t *boundedLatency) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			sleep := t.delay() - time.Since(c.Timestamp)
			timer := time.NewTimer(sleep)
			select {
			case <-timer.C:
				c.Timestamp = c.Timestamp.Add(sleep)
				select {
				case stub.Output <- c:
					continue
				case <-stub.Interrupt:
				}
			case <-stub.Interrupt:
				timer.Stop()
			}
			handOff(stub, c)
			return
		}
	}
}

// handOff passes c to the next stage, for at most handOffWait: nothing is
// dropped while the link lives.
func handOff(stub *toxics.ToxicStub, c *stream.StreamChunk) {
	t := time.NewTimer(handOffWait)
	defer t.Stop()
	select {
	case stub.Output <- c:
	case <-t.C:
	}
}
