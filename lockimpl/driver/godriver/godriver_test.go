package godriver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/cluster/clustertest"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
)

// session is one Serve over pipes, spoken to line by line.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
	id   int64
}

func serve(t *testing.T, lock string) *session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() { s.done <- Serve(lock, inR, outW); outW.Close() }()
	t.Cleanup(func() { inW.Close() })
	return s
}

// next reads the next line (a reply or an event), within 5s.
func (s *session) next() driver.Reply {
	s.t.Helper()
	got := make(chan bool, 1)
	go func() { got <- s.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			s.t.Fatalf("driver output ended: %v", s.out.Err())
		}
	case <-time.After(5 * time.Second):
		s.t.Fatal("no line from the driver in 5s")
	}
	var m driver.Reply
	if err := json.Unmarshal(s.out.Bytes(), &m); err != nil {
		s.t.Fatalf("line %q: %v", s.out.Text(), err)
	}
	return m
}

// call sends req and returns its answer.
func (s *session) call(req driver.Request) driver.Reply {
	s.t.Helper()
	s.id++
	req.ID = s.id
	b, _ := json.Marshal(req)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
	m := s.next()
	if m.InReplyTo != s.id {
		s.t.Fatalf("answer %+v to request %d", m, s.id)
	}
	return m
}

func (s *session) start(addr, conn string) {
	s.t.Helper()
	h := s.call(driver.Request{Type: "hello", Protocol: driver.Protocol})
	if h.Type != driver.TypeHelloOK || h.Protocol != driver.Protocol {
		s.t.Fatalf("hello: %+v", h)
	}
	client := 4
	m := s.call(driver.Request{Type: "init", Client: &client, ConnName: conn, KeyPrefix: "lc:gd:", Topology: "single",
		Endpoints: []driver.EndpointMsg{{Addr: addr}},
		Options:   &driver.InitOptions{TTLMS: 300, AcquireTimeoutMS: 600, CommandTimeoutMS: 150, RetryDelayMS: 10, RenewIntervalMS: 100}})
	if m.Type != driver.TypeInitOK {
		s.t.Fatalf("init: %+v", m)
	}
}

// The Go driver speaks the protocol for a built-in on a real server: its
// hello declares the lock's capabilities, its connections carry the name
// given, acquires are definite both ways, the watchdog's renewals are
// pushed, and shutdown ends it.
func TestServeWatchdog(t *testing.T) {
	c := clustertest.Start(t, cluster.Spec{Topology: cluster.Single})
	addr := c.Endpoints()[0].Addr
	admin := c.AdminClient(c.Nodes[0])

	h := serve(t, "watchdog").call(driver.Request{Type: "hello", Protocol: driver.Protocol})
	if h.Name != "go-watchdog" || strings.Join(h.Capabilities, ",") != "reentrant,renews" || !strings.Contains(strings.Join(h.Reports, ","), "renewals") {
		t.Errorf("hello: %+v", h)
	}
	a := serve(t, "watchdog")
	a.start(addr, "lc-gd-c4")
	b := serve(t, "watchdog")
	b.start(addr, "lc-gd-c5")

	if p := a.call(driver.Request{Type: "ping"}); p.Type != driver.TypePong || p.T1 < p.T0 {
		t.Errorf("ping: %+v", p)
	}
	zero := int64(0)
	ttl := int64(300)
	m := a.call(driver.Request{Type: "acquire", Key: "lc:gd:k0", TTLMS: &ttl, WaitMS: &zero})
	if m.Type != driver.TypeAcquired || m.Lease == "" || m.Token == "" || m.Depth != 1 || m.DeadlineNS == nil || *m.DeadlineNS <= m.T1 || m.T1 < m.T0 {
		t.Fatalf("acquire: %+v", m)
	}
	lease := m.Lease
	if n, err := admin.Exists(context.Background(), "lc:gd:k0").Result(); err != nil || n != 1 {
		t.Errorf("the key is not at the server (%d, %v)", n, err)
	}
	list, _ := admin.ClientList(context.Background()).Result()
	if !strings.Contains(list, "name=lc-gd-c4") {
		t.Errorf("no connection named lc-gd-c4 at the server:\n%s", list)
	}
	if n := b.call(driver.Request{Type: "acquire", Key: "lc:gd:k0", TTLMS: &ttl, WaitMS: &zero}); n.Type != driver.TypeNotAcquired {
		t.Errorf("a second client's acquire of the held key: %+v", n)
	}
	// The watchdog renews every 100ms: a renewal is pushed.
	ev := a.next()
	if ev.Type != driver.TypeRenewal || ev.Lease != lease || ev.Outcome != "ok" || ev.DeadlineNS == nil {
		t.Errorf("event %+v, want a renewal of %s", ev, lease)
	}
	r := a.call(driver.Request{Type: "release", Lease: lease})
	for r.Type == driver.TypeRenewal { // a renewal racing the release
		r = a.next()
	}
	if r.Type != driver.TypeReleased {
		t.Errorf("release: %+v", r)
	}
	if r := a.call(driver.Request{Type: "release", Lease: lease}); r.Type != driver.TypeError {
		t.Errorf("release of a released lease: %+v", r)
	}
	if r := a.call(driver.Request{Type: "extend", Lease: lease, TTLMS: &ttl}); r.Type != driver.TypeError || !strings.Contains(r.Error, "unsupported") {
		t.Errorf("extend: %+v", r)
	}
	if r := a.call(driver.Request{Type: "shutdown"}); r.Type != driver.TypeShutdownOK {
		t.Errorf("shutdown: %+v", r)
	}
	select {
	case err := <-a.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Serve did not return after shutdown")
	}
}
