package checker

import "github.com/lockchaos/lockchaos/history"

// The replay's token tables (cmdrecord.go): which client wrote a token
// (tokOwner: a replica's copy of a write names no client) and what the
// acquire that carried it returned (tokAcq). Every lock cycle brings a new
// token, so kept for the whole run they grew with it: 60 s of 50 clients
// held 0.5 M acquires' and 0.75 M writes' tokens, most of a streamed
// check's heap (issue 33). Each entry carries its time, and a stream drops
// the ones older than a window's pruning cut (pruneTokens).

// tokResult is an acquire's result for its token, and when it returned.
type tokResult struct {
	res    history.Result
	t      int64
	client int32 // whose acquire reported the token
}

// tokWriter is the client whose recorded write carried a token, and the
// write's server time.
type tokWriter struct {
	client int32
	t      int64
}

// replicaTokenKeep is how long before the pruning cut a token is kept
// where nodes have replicas. The cut is already a margin (two TTLs and
// more) behind what the next window replays, which covers an acquire's
// SET NX (within its call) and its retries; the 10 s more are for a
// replica's copy of a write, which names its writer, and whether its
// acquire took the key, by the token, and may arrive that late behind a
// replication lag. A copy later still names no writer (the key's owner on
// that replica is then unknown to the replay, as for the harness's own
// writes), where a whole check would name it.
const replicaTokenKeep = int64(10e9)

// pruneTokens drops the tokens no later window looks up.
func (m *model) pruneTokens(cut int64) {
	before := cut
	if m.topo != "single" && m.topo != "independent" {
		before -= replicaTokenKeep
	}
	for tok, r := range m.tokAcq {
		if r.t < before {
			delete(m.tokAcq, tok)
		}
	}
	for k := range m.acqTok {
		if k.ack < before {
			delete(m.acqTok, k)
		}
	}
	m.tokCut = max(m.tokCut, before)
	for tok, w := range m.tokOwner {
		if w.t < before {
			delete(m.tokOwner, tok)
		}
	}
}
