// Command brokendriver is a driver that breaks the lock-client protocol in
// one way, for `lockchaos driver check`'s tests: it serves a built-in lock
// (godriver) and rewrites, holds back or drops lines between lockchaos and
// it. `brokendriver KIND [LOCK]`; KIND none breaks nothing, LOCK is the
// built-in lock (default simple).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/lockchaos/lockchaos/lockimpl/driver"
	"github.com/lockchaos/lockchaos/lockimpl/driver/godriver"
)

// The kinds, each named by the check it breaks.
var kinds = map[string]string{
	"none":           "breaks nothing",
	"hello-fields":   "hello_ok without library, version and language",
	"init":           "answers init with an error",
	"unreachable":    "answers init with an error saying it could not connect (unavailable)",
	"acquire":        "acquired without a lease",
	"conn-name":      "drops init's conn_name: the connections go unnamed",
	"keys":           "writes its keys outside key_prefix and reports none",
	"refused":        "answers error where the lock refused (not_acquired)",
	"waits":          "ignores wait_ms: a waiting acquire answers at once",
	"waits-unsure":   "answers indeterminate where a waiting acquire was refused",
	"refused-unsure": "answers indeterminate where a single attempt (wait_ms 0) was refused",
	"unsure-once":    "answers indeterminate where the first single attempt and the first waiting acquire were refused (as a loaded machine may): breaks nothing",
	"ping":           "answers every request in turn: a ping waits behind an acquire",
	"release":        "answers released without releasing",
	"stopped":        "answers a refusal (not_acquired, released) where the outcome is unknown",
	"reset":          "answers reset_ok to every reset, holding or not, and keeps its clients",
	"bounded":        "never answers an indeterminate call",
	"shutdown":       "ignores shutdown",
}

func main() {
	if len(os.Args) < 2 || kinds[os.Args[1]] == "" {
		fmt.Fprintf(os.Stderr, "usage: brokendriver KIND [LOCK]; kinds: %v\n", kinds)
		os.Exit(2)
	}
	kind, lock := os.Args[1], "simple"
	if len(os.Args) > 2 {
		lock = os.Args[2]
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- godriver.Serve(lock, inR, outW); outW.Close() }()
	f := &filter{kind: kind, pending: map[int64]driver.Request{}, answered: make(chan struct{}, 1)}
	go f.replies(outR, os.Stdout)
	f.requests(os.Stdin, inW)
	inW.Close()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "brokendriver:", err)
		os.Exit(1)
	}
}

type filter struct {
	kind     string
	mu       sync.Mutex
	pending  map[int64]driver.Request
	answered chan struct{} // kind ping: one request at a time
	wmu      sync.Mutex
	unsure   [2]int // refused acquires answered indeterminate: single attempts, waiting ones
}

func (f *filter) requests(in io.Reader, to io.Writer) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req driver.Request
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		switch {
		case f.kind == "shutdown" && req.Type == "shutdown":
			continue
		case f.kind == "conn-name" && req.Type == "init":
			req.ConnName = ""
		case f.kind == "keys" && req.Type == "init":
			req.KeyPrefix = "hidden:" + req.KeyPrefix
		case f.kind == "keys" && req.Key != "":
			req.Key = "hidden:" + req.Key
		case f.kind == "waits" && req.Type == "acquire":
			zero := int64(0)
			req.WaitMS = &zero
		case f.kind == "reset" && req.Type == "reset":
			f.answer(driver.Reply{InReplyTo: req.ID, Type: driver.TypeResetOK})
			continue
		case f.kind == "release" && req.Type == "release":
			f.answer(driver.Reply{InReplyTo: req.ID, Type: driver.TypeReleased})
			continue
		}
		f.mu.Lock()
		f.pending[req.ID] = req
		f.mu.Unlock()
		b, _ := json.Marshal(req)
		to.Write(append(b, '\n'))
		if f.kind == "ping" {
			<-f.answered
		}
	}
}

func (f *filter) replies(from io.Reader, to io.Writer) {
	sc := bufio.NewScanner(from)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m driver.Reply
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		f.mu.Lock()
		req := f.pending[m.InReplyTo]
		delete(f.pending, m.InReplyTo)
		f.mu.Unlock()
		if f.kind == "ping" && m.InReplyTo != 0 {
			select {
			case f.answered <- struct{}{}:
			default:
			}
		}
		switch {
		case f.kind == "hello-fields" && m.Type == driver.TypeHelloOK:
			m.Library, m.Version, m.Language = "", "", ""
		case f.kind == "init" && m.Type == driver.TypeInitOK:
			m = driver.Reply{InReplyTo: m.InReplyTo, Type: driver.TypeError, Error: "broken on purpose"}
		case f.kind == "unreachable" && m.Type == driver.TypeHelloOK:
			m.Name = "broken-unreachable" // not the served lock's name: a lock of its own
		case f.kind == "unreachable" && m.Type == driver.TypeInitOK:
			m = driver.Reply{InReplyTo: m.InReplyTo, Type: driver.TypeError, Error: "connect: connection refused", Unavailable: true}
		case f.kind == "acquire" && m.Type == driver.TypeAcquired:
			m.Lease = ""
		case f.kind == "refused" && m.Type == driver.TypeNotAcquired:
			m = driver.Reply{InReplyTo: m.InReplyTo, Type: driver.TypeError, Error: "broken on purpose", T0: m.T0, T1: m.T1}
		case f.kind == "stopped" && (m.Type == driver.TypeIndetermined || m.Type == driver.TypeError):
			m.Type, m.Error = driver.TypeNotAcquired, ""
			if req.Type == "release" {
				m.Type = driver.TypeReleased
			}
		case f.kind == "bounded" && (m.Type == driver.TypeIndetermined || m.Type == driver.TypeError):
			continue
		case m.Type == driver.TypeNotAcquired && f.unsureOf(req):
			m.Type, m.Error = driver.TypeIndetermined, "a command failed (on purpose)"
		}
		f.answer(m)
	}
}

// unsureOf says whether a refusal of req is answered indeterminate instead.
func (f *filter) unsureOf(req driver.Request) bool {
	waiting := 0
	if req.WaitMS != nil && *req.WaitMS > 0 {
		waiting = 1
	}
	switch {
	case f.kind == "waits-unsure" && waiting == 1, f.kind == "refused-unsure" && waiting == 0,
		f.kind == "unsure-once" && f.unsure[waiting] == 0:
		f.unsure[waiting]++
		return true
	}
	return false
}

func (f *filter) answer(m driver.Reply) {
	b, _ := json.Marshal(m)
	f.wmu.Lock()
	defer f.wmu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}
