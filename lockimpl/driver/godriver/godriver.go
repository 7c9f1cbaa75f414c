// Package godriver is a driver (docs/driver-protocol.md) for lockchaos's
// own built-in locks: it serves one lockimpl lock by name over the
// protocol, so a built-in run through a driver process can be compared
// with the same lock run in-process (nothing lost through the protocol).
// cmd/lockchaos-driver is its program.
package godriver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
)

// server is one driver session.
type server struct {
	lock string
	info lockimpl.Info
	base time.Time // the monotonic clock's origin

	wmu sync.Mutex
	out *bufio.Writer

	mu     sync.Mutex
	lk     lockimpl.Locker
	conns  []redis.UniversalClient
	opts   lockimpl.Options
	leases map[string]*held
	// byTok are the held leases by key and token, outermost first (a
	// reentrant lock's levels share one token).
	byTok map[string][]*held
	n     int
}

type held struct {
	name  string
	lease lockimpl.Lease
	done  chan struct{}
	lost  sync.Once
}

// Serve speaks the protocol on in and out for the built-in lock named lock
// until shutdown or the end of in.
func Serve(lock string, in io.Reader, out io.Writer) error {
	info, _, err := lockimpl.Lookup(lock)
	if err != nil {
		return err
	}
	s := &server{lock: lock, info: info, base: time.Now(), out: bufio.NewWriter(out), leases: map[string]*held{}, byTok: map[string][]*held{}}
	defer s.close()
	work := make(chan driver.Request, 16)
	done := make(chan struct{})
	go func() { // the requests that call the lock, one at a time
		defer close(done)
		for req := range work {
			if s.handle(req) {
				return
			}
		}
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var req driver.Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("lockchaos-driver: bad request %q: %w", sc.Text(), err)
		}
		switch req.Type {
		case "ping": // at once, even while a call is in flight
			t := s.mono()
			s.reply(req.ID, driver.Reply{Type: driver.TypePong, T0: t, T1: s.mono()})
			continue
		case "clock":
			s.reply(req.ID, driver.Reply{Type: driver.TypeClockOK, MonoNS: s.mono(), WallNS: time.Now().UnixNano()})
			continue
		}
		select {
		case work <- req:
		case <-done:
			return nil
		}
		if req.Type == "shutdown" {
			break
		}
	}
	close(work)
	<-done
	return sc.Err()
}

func (s *server) mono() int64              { return int64(time.Since(s.base)) }
func (s *server) monoAt(t time.Time) int64 { return int64(t.Sub(s.base)) }

func (s *server) send(m driver.Reply) {
	b, _ := json.Marshal(m)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *server) reply(id int64, m driver.Reply) {
	m.InReplyTo = id
	s.send(m)
}

// handle answers one request; it reports whether the session ends.
func (s *server) handle(req driver.Request) bool {
	switch req.Type {
	case "hello":
		s.reply(req.ID, s.hello())
	case "init":
		t0 := s.mono()
		if err := s.init(req); err != nil {
			s.reply(req.ID, driver.Reply{Type: driver.TypeError, Error: err.Error(), T0: t0, T1: s.mono()})
			break
		}
		s.reply(req.ID, driver.Reply{Type: driver.TypeInitOK, T0: t0, T1: s.mono()})
	case "acquire":
		s.reply(req.ID, s.acquire(req))
	case "release":
		s.reply(req.ID, s.release(req))
	case "extend":
		s.reply(req.ID, driver.Reply{Type: driver.TypeError, Error: "unsupported: the built-in locks have no extend", T0: s.mono(), T1: s.mono()})
	case "shutdown":
		s.close()
		s.reply(req.ID, driver.Reply{Type: driver.TypeShutdownOK})
		return true
	case "reset":
		s.reply(req.ID, s.reset())
	default:
		s.reply(req.ID, driver.Reply{Type: driver.TypeError, Error: "unknown request type " + strconv.Quote(req.Type)})
	}
	return false
}

func (s *server) hello() driver.Reply {
	var caps, reports []string
	i := s.info
	for _, c := range []struct {
		on   bool
		name string
	}{{i.Reentrant, "reentrant"}, {i.Renews, "renews"}, {i.MinNodes > 0, "multi-node"}, {i.Fenced, "fenced"}, {i.NeedsReplicas, "needs-replicas"}, {i.NoCluster != "", "no-cluster"}} {
		if c.on {
			caps = append(caps, c.name)
		}
	}
	reports = []string{"deadline", "lost"}
	if i.Fenced {
		reports = append(reports, "fence")
	}
	if i.Renews {
		reports = append(reports, "renewals")
	}
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	return driver.Reply{Type: driver.TypeHelloOK, Protocol: driver.Protocol, Name: "go-" + s.lock, Library: "lockchaos/lockimpl." + s.lock,
		Version: version, Language: "go", Capabilities: caps, Reports: reports, Extensions: []string{"reset"}}
}

// init dials the endpoints given (named conn_name) as the harness dials its
// own clients, and builds the lock.
func (s *server) init(req driver.Request) error {
	if req.Options == nil || len(req.Endpoints) == 0 {
		return errors.New("init without options or endpoints")
	}
	o := req.Options
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	opts := lockimpl.Options{TTL: ms(o.TTLMS), AcquireTimeout: ms(o.AcquireTimeoutMS), CommandTimeout: ms(o.CommandTimeoutMS),
		RetryDelay: ms(o.RetryDelayMS), RenewInterval: ms(o.RenewIntervalMS)}
	const timeout = time.Second // the harness's clients' (cluster.DefaultTimeout)
	var eps []lockimpl.Endpoint
	for _, ep := range req.Endpoints {
		var c redis.UniversalClient
		switch {
		case len(ep.Cluster) > 0:
			c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: ep.Cluster, Password: ep.Password, Protocol: 2, MaxRetries: -1, MaxRedirects: -1,
				ClusterStateReloadInterval: 250 * time.Millisecond, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
				ContextTimeoutEnabled: true, PoolSize: 4, DisableIdentity: true, ClientName: req.ConnName})
		case ep.MasterName != "":
			c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: ep.MasterName, SentinelAddrs: ep.Sentinels, Password: ep.Password,
				Protocol: 2, MaxRetries: -1, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
				ContextTimeoutEnabled: true, PoolSize: 4, DisableIdentity: true, ClientName: req.ConnName})
		default:
			c = redis.NewClient(&redis.Options{Addr: ep.Addr, Password: ep.Password, Protocol: 2, MaxRetries: -1, DialTimeout: timeout,
				ReadTimeout: timeout, WriteTimeout: timeout, ContextTimeoutEnabled: true, PoolSize: 4, DisableIdentity: true, ClientName: req.ConnName})
		}
		s.conns = append(s.conns, c)
		eps = append(eps, lockimpl.Endpoint{Addr: ep.Addr, ClusterAddrs: ep.Cluster, MasterName: ep.MasterName, SentinelAddrs: ep.Sentinels, Password: ep.Password})
	}
	client := 0
	if req.Client != nil {
		client = *req.Client
	}
	lk, err := lockimpl.New(s.lock, lockimpl.Env{ClientID: client, Conns: s.conns, Endpoints: eps, Clock: lockimpl.RealClock{}, Options: opts,
		Note: s.note, KeyPrefix: req.KeyPrefix, ConnName: req.ConnName})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.lk, s.opts = lk, opts.WithDefaults()
	s.mu.Unlock()
	return nil
}

// note pushes a renewal or a loss of a held lease.
func (s *server) note(n lockimpl.Note) {
	s.mu.Lock()
	hs := slices.Clone(s.byTok[n.Key+"\x00"+n.Token])
	s.mu.Unlock()
	if len(hs) == 0 {
		return
	}
	h := hs[0] // a renewal is the outermost lease's; a loss every level's
	switch n.Kind {
	case lockimpl.NoteLost:
		for _, h := range hs {
			s.lost(h, n.Start, fmt.Sprint(n.Err))
		}
	case lockimpl.NoteRenew:
		m := driver.Reply{Type: driver.TypeRenewal, Lease: h.name, T0: s.monoAt(n.Start), T1: s.monoAt(n.End), Outcome: "ok"}
		switch {
		case n.Err == nil:
			if d := h.lease.Deadline(); !d.IsZero() {
				v := s.monoAt(d)
				m.DeadlineNS = &v
			}
		case errors.Is(n.Err, lockimpl.ErrNotOwner):
			m.Outcome = "not_owner"
		default:
			m.Outcome, m.Error = "indeterminate", n.Err.Error()
		}
		s.send(m)
	}
}

// lost pushes a lease's loss once: by a NoteLost or its Lost channel.
func (s *server) lost(h *held, t time.Time, reason string) {
	h.lost.Do(func() { s.send(driver.Reply{Type: driver.TypeLost, Lease: h.name, T: s.monoAt(t), Reason: reason}) })
}

func (s *server) acquire(req driver.Request) driver.Reply {
	if s.lk == nil {
		return driver.Reply{Type: driver.TypeError, Error: "acquire before init"}
	}
	wait := time.Duration(0)
	if req.WaitMS != nil {
		wait = time.Duration(*req.WaitMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+2*s.opts.CommandTimeout+time.Second)
	defer cancel()
	t0 := time.Now()
	var l lockimpl.Lease
	var err error
	if wait == 0 {
		l, err = s.lk.TryAcquire(ctx, req.Key)
	} else {
		l, err = s.lk.Acquire(ctx, req.Key)
	}
	t1 := time.Now()
	m := driver.Reply{T0: s.monoAt(t0), T1: s.monoAt(t1)}
	switch {
	case err == nil && l != nil:
		s.mu.Lock()
		s.n++
		h := &held{name: "L" + strconv.Itoa(s.n), lease: l, done: make(chan struct{})}
		s.leases[h.name] = h
		k := l.Key() + "\x00" + l.Token()
		s.byTok[k] = append(s.byTok[k], h)
		s.mu.Unlock()
		m.Type, m.Lease, m.Token, m.Depth = driver.TypeAcquired, h.name, l.Token(), l.Depth()
		if f, ok := l.Fence(); ok {
			m.Fence = &f
		}
		if d := l.Deadline(); !d.IsZero() {
			v := s.monoAt(d)
			m.DeadlineNS = &v
		}
		if lost := l.Lost(); lost != nil {
			go func() {
				select {
				case <-lost:
					s.lost(h, time.Now(), "lost")
				case <-h.done:
				}
			}()
		}
	default:
		failed(&m, err, lockimpl.ErrNotAcquired, driver.TypeNotAcquired)
	}
	return m
}

func (s *server) release(req driver.Request) driver.Reply {
	s.mu.Lock()
	h := s.leases[req.Lease]
	s.mu.Unlock()
	if h == nil {
		return driver.Reply{Type: driver.TypeError, Error: "no lease " + strconv.Quote(req.Lease)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.opts.CommandTimeout+time.Second)
	defer cancel()
	t0 := time.Now()
	err := h.lease.Release(ctx)
	t1 := time.Now()
	s.mu.Lock()
	delete(s.leases, h.name)
	k := h.lease.Key() + "\x00" + h.lease.Token()
	if s.byTok[k] = slices.DeleteFunc(s.byTok[k], func(x *held) bool { return x == h }); len(s.byTok[k]) == 0 {
		delete(s.byTok, k)
	}
	s.mu.Unlock()
	close(h.done)
	m := driver.Reply{Type: driver.TypeReleased, T0: s.monoAt(t0), T1: s.monoAt(t1)}
	if err != nil {
		failed(&m, err, lockimpl.ErrNotOwner, driver.TypeNotOwner)
	}
	return m
}

// failed sets m's type for a call's error: definite (err is refused, as
// the type refusal), indeterminate (timeouts, broken connections) or
// error (anything else).
func failed(m *driver.Reply, err, refused error, refusal string) {
	switch {
	case errors.Is(err, refused):
		m.Type = refusal
	case lockimpl.IsIndeterminate(err):
		m.Type, m.Error = driver.TypeIndetermined, err.Error()
	default:
		m.Type, m.Error = driver.TypeError, err.Error()
	}
}

// reset (the reset extension: warm drivers) forgets the session, its
// lock and connections closed, for the next init; refused while a lease
// is held (its renewals would outlive the session).
func (s *server) reset() driver.Reply {
	s.mu.Lock()
	n := len(s.leases)
	s.mu.Unlock()
	if n > 0 {
		return driver.Reply{Type: driver.TypeError, Error: fmt.Sprintf("reset: %d leases held", n)}
	}
	s.close()
	return driver.Reply{Type: driver.TypeResetOK}
}

func (s *server) close() {
	s.mu.Lock()
	lk, conns := s.lk, s.conns
	s.lk, s.conns = nil, nil
	s.mu.Unlock()
	if lk != nil {
		_ = lk.Close()
	}
	for _, c := range conns {
		_ = c.Close()
	}
}
