package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Check checks a driver against the protocol (docs/driver-protocol.md)
// before any scenario runs it, the way Maelstrom's checkers hold a node to
// its protocol: two processes of the driver over one redis-server that the
// check may stop (SIGSTOP), each request's answer held to a bound, and the
// server looked at after each step. Each check passes, fails with a
// sentence naming the message and the field, or is skipped with its reason
// (a check that needs what an earlier one did not give).

// CheckServer is the redis-server a check runs its driver against: its
// address, a client of its own, and a way to stop and continue it.
type CheckServer struct {
	Addr   string
	Admin  *redis.Client
	Pause  func() error
	Resume func() error
}

// CheckOptions are a check's inputs.
type CheckOptions struct {
	Spec   *Spec
	Server CheckServer
	// Extra are lock options (the lock file's and --lock-opt's).
	Extra map[string]string
	// TTL is the lease the check asks for (default 2s); CommandTimeout
	// the command timeout it sends in init (default 200ms).
	TTL, CommandTimeout time.Duration
	// KeyPrefix is the prefix the check's keys are under (default
	// lc:check:).
	KeyPrefix string
}

// Verdicts of a check.
const (
	CheckPass = "pass"
	CheckFail = "fail"
	CheckSkip = "skip"
)

// CheckResult is one check's outcome.
type CheckResult struct {
	Name string `json:"name"`
	// What the check holds the driver to, one line.
	What    string        `json:"what"`
	Verdict string        `json:"verdict"`
	Detail  string        `json:"detail,omitempty"`
	Took    time.Duration `json:"took_ns"`
}

// The checks, in the order they run.
var checkWhat = []struct{ name, what string }{
	{"hello", "hello_ok names its protocol, lock, library, version and language, with known capabilities and reports"},
	{"init", "init_ok within the start bound"},
	{"acquire", "an acquire of a free key answers acquired with a lease"},
	{"conn-name", "the driver's connections carry init's conn_name in CLIENT LIST"},
	{"keys", "the keys an acquire writes are under key_prefix or named in acquired.keys"},
	{"refused", "a held key is refused (not_acquired) to another client at once with wait_ms 0 (an indeterminate is asked once more)"},
	{"waits", "an acquire with wait_ms waits about that long before not_acquired (an indeterminate is asked once more)"},
	{"ping-while-waiting", "ping and clock are answered while an acquire waits"},
	{"release", "release answers released and the key is gone"},
	{"not-owner", "a release after the lease expired leaves the next holder's key"},
	{"stopped-server", "against a server that does not answer, acquire and release say indeterminate (or error), never a refusal or a success"},
	{"reset", "a driver with the reset extension refuses reset while it holds a lease, and after reset_ok its connections are gone and a fresh init locks again"},
	{"bounded", "every call is answered within the bound a run holds it to: its wait, two command timeouts and 5 s"},
	{"shutdown", "shutdown answers shutdown_ok and the process exits"},
}

// CheckNames are the checks' names, in order.
func CheckNames() []string {
	out := make([]string, len(checkWhat))
	for i, c := range checkWhat {
		out[i] = c.name
	}
	return out
}

// checkRun is one check session.
type checkRun struct {
	o       CheckOptions
	res     map[string]*CheckResult
	a, b    *proc
	hello   Reply
	prefix  string
	late    []string // calls over their bound
	leaseA  string   // client 0's lease on k0
	started time.Time
}

// RunCheck runs every check and returns their results in order. It stops
// what it started; the server is left running and continued.
func RunCheck(ctx context.Context, o CheckOptions) []CheckResult {
	if o.TTL <= 0 {
		o.TTL = 2 * time.Second
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 200 * time.Millisecond
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = "lc:check:"
	}
	c := &checkRun{o: o, res: map[string]*CheckResult{}, prefix: o.KeyPrefix}
	for _, w := range checkWhat {
		c.res[w.name] = &CheckResult{Name: w.name, What: w.what}
	}
	defer c.stopAll()
	c.steps(ctx)
	out := make([]CheckResult, 0, len(checkWhat))
	for _, w := range checkWhat {
		r := c.res[w.name]
		if r.Verdict == "" {
			r.Verdict, r.Detail = CheckSkip, "not reached: an earlier check failed"
		}
		out = append(out, *r)
	}
	return out
}

func (c *checkRun) stopAll() {
	for _, p := range []*proc{c.a, c.b} {
		if p != nil {
			_ = p.stop()
		}
	}
	if c.o.Server.Admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.o.Server.Resume()
		c.deleteKeys(ctx)
	}
}

func (c *checkRun) deleteKeys(ctx context.Context) {
	keys, _ := c.o.Server.Admin.Keys(ctx, "*").Result()
	for _, k := range keys {
		if strings.Contains(k, c.prefix) { // under the prefix, or a library's name around it
			c.o.Server.Admin.Del(ctx, k)
		}
	}
}

func (c *checkRun) pass(name, detail string) { c.set(name, CheckPass, detail) }
func (c *checkRun) fail(name, format string, a ...any) {
	c.set(name, CheckFail, fmt.Sprintf(format, a...))
}
func (c *checkRun) skip(name, why string) { c.set(name, CheckSkip, why) }

// answered fails check name, saying what was asked, unless the request
// was answered with type want.
func (c *checkRun) answered(name, what string, m Reply, err error, want string) bool {
	switch {
	case err != nil:
		c.fail(name, "%s: %v", what, err)
	case m.Type != want:
		c.fail(name, "%s answered %s (error %q): want %s", what, m.Type, m.Error, want)
	default:
		return true
	}
	return false
}

func (c *checkRun) set(name, verdict, detail string) {
	r := c.res[name]
	if r.Verdict == CheckFail {
		return // the first failure stands
	}
	r.Verdict, r.Detail = verdict, detail
}

// steps runs the checks in order; a step that cannot go on returns.
func (c *checkRun) steps(ctx context.Context) {
	if !c.startBoth() {
		return
	}
	if !c.acquireFirst(ctx) {
		return
	}
	unsure := c.contend()
	c.releaseFirst(ctx)
	c.waitsAgain(unsure)
	c.expiredRelease(ctx)
	c.stoppedServer(ctx)
	c.reset(ctx)
	if len(c.late) > 0 {
		c.fail("bounded", "%s", strings.Join(c.late, "; "))
	} else {
		c.pass("bounded", "")
	}
	c.shutdown()
}

// call sends req to p and holds its answer to bound (reported under the
// bounded check when it is over), giving up a second after it.
func (c *checkRun) call(p *proc, req Request, bound time.Duration) (Reply, time.Duration, error) {
	t0 := time.Now()
	giveUp := bound + time.Second
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	m, err := p.call(ctx, &req, giveUp)
	took := time.Since(t0)
	if took > bound {
		what := req.Type
		if req.WaitMS != nil {
			what += fmt.Sprintf(" (wait_ms %d)", *req.WaitMS)
		}
		if err != nil {
			c.late = append(c.late, fmt.Sprintf("%s: no answer in %v (bound %v)", what, took.Round(time.Millisecond), bound))
		} else {
			c.late = append(c.late, fmt.Sprintf("%s: answered %s after %v (bound %v)", what, m.Type, took.Round(time.Millisecond), bound))
		}
	}
	return m, took, err
}

// bound is a request's bound, the one lockchaos holds a driver to in a run
// (Locker.bound): its wait, two command timeouts and ReplyMargin.
func (c *checkRun) bound(wait time.Duration) time.Duration {
	return wait + 2*c.o.CommandTimeout + ReplyMargin
}

// wait is the wait_ms of the check's waiting acquire: well inside the
// holder's lease (2/5 of the TTL: 800 ms of the default 2 s).
func (c *checkRun) wait() time.Duration { return c.o.TTL * 2 / 5 }

func (c *checkRun) key(k string) string { return c.prefix + "{" + k + "}" }

// startBoth starts two processes of the driver (clients 0 and 1): hello
// and init.
func (c *checkRun) startBoth() bool {
	t0 := time.Now()
	a, m, err := c.startOne(0)
	c.res["hello"].Took = time.Since(t0)
	if err != nil {
		return false
	}
	c.a, c.hello = a, m
	c.checkHelloFields(m)
	b, _, err := c.startOne(1)
	if err != nil {
		return false
	}
	c.b = b
	c.pass("init", "")
	return true
}

// startOne starts one process: hello (the hello check fails on a bad one)
// and init (the init check).
func (c *checkRun) startOne(client int) (*proc, Reply, error) {
	s := c.o.Spec
	p, err := start(s, s.label(), nil, c.o.Extra)
	if err != nil {
		c.fail("hello", "the driver did not start: %v", err)
		return nil, Reply{}, err
	}
	m, err := p.call(context.Background(), &Request{Type: "hello", Protocol: Protocol}, StartTimeout)
	if err == nil {
		err = checkHello(s, s.label(), m)
	}
	if err != nil {
		c.fail("hello", "hello: %v", err)
		_ = p.stop()
		return nil, Reply{}, err
	}
	for k := range c.o.Extra {
		if k != "version" && !slices.Contains(m.Options, k) {
			c.fail("hello", "hello_ok.options %v does not list the lock option %s it is started with", m.Options, k)
		}
	}
	// acquire_timeout_ms: above the longest wait_ms the check sends (a
	// driver may bound its waits by it).
	o := InitOptions{TTLMS: c.o.TTL.Milliseconds(), AcquireTimeoutMS: c.wait().Milliseconds() + 200, CommandTimeoutMS: c.o.CommandTimeout.Milliseconds(),
		RetryDelayMS: 10, Extra: c.o.Extra}
	req := Request{Type: "init", Client: &client, ConnName: fmt.Sprintf("lc-check-c%d", client), KeyPrefix: c.prefix, Topology: "single",
		Endpoints: []EndpointMsg{{Addr: c.o.Server.Addr}}, Options: &o}
	r, _, err := c.call(p, req, StartTimeout)
	switch {
	case err != nil:
		c.fail("init", "client %d: init: %v", client, err)
	case r.Type != TypeInitOK:
		c.fail("init", "client %d: answered init with %s (error %q): want init_ok", client, r.Type, r.Error)
		err = errors.New(r.Type)
	}
	if err != nil {
		_ = p.stop()
		return nil, Reply{}, err
	}
	return p, m, nil
}

// checkHelloFields holds hello_ok to the fields a report names the lock by.
func (c *checkRun) checkHelloFields(m Reply) {
	var missing []string
	for _, f := range []struct{ name, v string }{{"library", m.Library}, {"version", m.Version}, {"language", m.Language}} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, "hello_ok."+f.name)
		}
	}
	if len(missing) > 0 {
		c.fail("hello", "%s empty: the results, the card and a finding's versions table name the lock by them", strings.Join(missing, ", "))
		return
	}
	if s := c.o.Spec; s.File != "" && s.Name != "" && s.Name != m.Name {
		c.fail("hello", "hello_ok.name %q is not its lock file's name %q (%s)", m.Name, s.Name, s.File)
		return
	}
	c.pass("hello", fmt.Sprintf("%s %s %s (%s), capabilities %v", m.Name, m.Library, m.Version, m.Language, m.Capabilities))
}

// acquireFirst: client 0 acquires k0; its connection names and its keys.
func (c *checkRun) acquireFirst(ctx context.Context) bool {
	before := c.serverKeys(ctx)
	t0 := time.Now()
	// With a wait: a free key must be won, and some libraries' single
	// attempt has a time budget of its own (RedissonRedLock's tryLock(0,
	// lease) gives up when its one master took a millisecond or more: a
	// rehearsal's long tier failed this check on a loaded machine).
	m, _, err := c.call(c.a, Request{Type: "acquire", Key: c.key("k0"), TTLMS: ms(c.o.TTL), WaitMS: ms(c.wait())}, c.bound(c.wait()))
	c.res["acquire"].Took = time.Since(t0)
	if !c.answered("acquire", "acquire of the free key "+c.key("k0"), m, err, TypeAcquired) {
		return false
	}
	switch {
	case m.Lease == "":
		c.fail("acquire", "acquired without a lease: release names the hold by acquired.lease")
		return false
	case m.T0 > m.T1:
		c.fail("acquire", "acquired.t0 %d after acquired.t1 %d: both are the driver's monotonic clock around the library call", m.T0, m.T1)
	default:
		c.pass("acquire", "lease "+m.Lease)
	}
	c.leaseA = m.Lease
	c.checkConnNames(ctx)
	c.checkKeys(ctx, before, m)
	return true
}

func (c *checkRun) checkConnNames(ctx context.Context) {
	list, err := c.o.Server.Admin.ClientList(ctx).Result()
	if err != nil {
		c.skip("conn-name", "CLIENT LIST: "+err.Error())
		return
	}
	if !strings.Contains(list, "name=lc-check-c0 ") {
		c.fail("conn-name", "no connection named lc-check-c0 (init.conn_name) in CLIENT LIST after client 0's acquire: the command record cannot tie the lock's commands to its client; name every connection the library opens (CLIENT SETNAME, or the library's client-name option)")
		return
	}
	c.pass("conn-name", "")
}

// dumps are the keys at the server now, each with its DUMP (its value, not
// its TTL).
func (c *checkRun) dumps(ctx context.Context) map[string]string {
	out := map[string]string{}
	for k := range c.serverKeys(ctx) {
		if d, err := c.o.Server.Admin.Dump(ctx, k).Result(); err == nil {
			out[k] = d
		}
	}
	return out
}

// serverKeys are the keys at the server now.
func (c *checkRun) serverKeys(ctx context.Context) map[string]bool {
	keys, _ := c.o.Server.Admin.Keys(ctx, "*").Result()
	out := map[string]bool{}
	for _, k := range keys {
		out[k] = true
	}
	return out
}

// checkKeys: every key the acquire created is under key_prefix or named
// in acquired.keys.
func (c *checkRun) checkKeys(ctx context.Context, before map[string]bool, m Reply) {
	var hidden []string
	seen := false
	for k := range c.serverKeys(ctx) {
		if before[k] {
			continue
		}
		seen = true
		if !strings.HasPrefix(k, c.prefix) && !slices.Contains(m.Keys, k) {
			hidden = append(hidden, k)
		}
	}
	switch {
	case !seen:
		c.fail("keys", "no key at the server after acquired: the lock holds nothing lockchaos can see")
	case len(hidden) > 0:
		slices.Sort(hidden)
		c.fail("keys", "the acquire wrote %s, outside key_prefix %q, and acquired.keys %v does not name it: the checks that read the servers go blind (docs/driver-protocol.md, a library that names its own keys)", strings.Join(hidden, ", "), c.prefix, m.Keys)
	default:
		c.pass("keys", "")
	}
}

// unsure: the driver could not tell (one of its commands failed or was in
// flight at wait_ms: a loaded machine, the check's short command timeout),
// an honest answer, not a wrong one, so refused and waits ask once more.
func unsure(r answer) bool { return r.err == nil && r.m.Type == TypeIndetermined }

// askedAgain is the note on a check whose first try answered first.
func askedAgain(first answer) string {
	return fmt.Sprintf(" (the first try answered indeterminate: %q)", first.m.Error)
}

// contend: client 1 is refused k0 at once, waits wait_ms, and answers ping
// and clock while it waits. A first wait answered indeterminate is left
// open and returned, for waitsAgain.
func (c *checkRun) contend() *answer {
	try := func() answer {
		m, took, err := c.call(c.b, Request{Type: "acquire", Key: c.key("k0"), TTLMS: ms(c.o.TTL), WaitMS: ms(0)}, c.bound(0))
		return answer{m, took, err}
	}
	r, retried := try(), ""
	if unsure(r) { // k0's lease has most of its TTL left
		retried = askedAgain(r)
		r = try()
	}
	c.res["refused"].Took = r.took
	if c.answered("refused", "client 1's acquire of k0, held by client 0, wait_ms 0"+retried, r.m, r.err, TypeNotAcquired) {
		c.pass("refused", fmt.Sprintf("in %v%s", r.took.Round(time.Millisecond), retried))
	}
	wait := c.wait()
	done := make(chan answer, 1)
	var answered atomic.Bool
	go func() {
		m, took, err := c.call(c.b, Request{Type: "acquire", Key: c.key("k0"), TTLMS: ms(c.o.TTL), WaitMS: ms(wait)}, c.bound(wait))
		answered.Store(true)
		done <- answer{m, took, err}
	}()
	time.Sleep(wait / 4)
	c.pingWhileWaiting(&answered)
	first := <-done
	if unsure(first) {
		return &first
	}
	c.judgeWaits(first, "")
	return nil
}

// waitsAgain judges the waits check that contend left open (first, nil
// when it did not): client 1 is asked once more to wait for a held key,
// after client 0 released k0 (whose lease may run out meanwhile): k2, which
// client 0 takes for the purpose and gives back after. When client 0
// cannot take k2, first stands.
func (c *checkRun) waitsAgain(first *answer) {
	if first == nil {
		return
	}
	r, k := *first, c.key("k2")
	if m, _, err := c.call(c.a, Request{Type: "acquire", Key: k, TTLMS: ms(c.o.TTL), WaitMS: ms(0)}, c.bound(0)); err == nil && m.Type == TypeAcquired {
		defer c.call(c.a, Request{Type: "release", Key: k, Lease: m.Lease}, c.bound(0))
		m, took, err := c.call(c.b, Request{Type: "acquire", Key: k, TTLMS: ms(c.o.TTL), WaitMS: ms(c.wait())}, c.bound(c.wait()))
		r = answer{m, took, err}
	}
	c.judgeWaits(r, askedAgain(*first))
}

func (c *checkRun) judgeWaits(r answer, retried string) {
	wait := c.wait()
	c.res["waits"].Took = r.took
	switch {
	case !c.answered("waits", fmt.Sprintf("client 1's acquire of a held key with wait_ms %d%s", wait.Milliseconds(), retried), r.m, r.err, TypeNotAcquired):
	case r.took < wait*3/4:
		c.fail("waits", "client 1's acquire of a held key with wait_ms %d answered not_acquired after %v: it did not wait (a library without a bounded acquire: retry until wait_ms, docs/driver-protocol.md)", wait.Milliseconds(), r.took.Round(time.Millisecond))
	default:
		c.pass("waits", fmt.Sprintf("not_acquired after %v of wait_ms %d%s", r.took.Round(time.Millisecond), wait.Milliseconds(), retried))
	}
}

// answer is a driver's reply to a call, with how long it took.
type answer struct {
	m    Reply
	took time.Duration
	err  error
}

// pingWhileWaiting sends ping and clock to client 1 while its acquire
// waits: each is answered within 300 ms, and before the acquire.
func (c *checkRun) pingWhileWaiting(acquireAnswered *atomic.Bool) {
	const most = 300 * time.Millisecond
	for _, typ := range []string{"ping", "clock"} {
		m, took, err := c.call(c.b, Request{Type: typ}, c.bound(0))
		want := TypePong
		if typ == "clock" {
			want = TypeClockOK
		}
		switch {
		case err != nil:
			c.fail("ping-while-waiting", "%s while an acquire waits: %v", typ, err)
		case m.Type != want:
			c.fail("ping-while-waiting", "%s while an acquire waits answered %s: want %s", typ, m.Type, want)
		case took > most:
			c.fail("ping-while-waiting", "%s while an acquire waits answered after %v, over %v: the reader must answer it at once, not after the acquire (lockchaos maps the driver's clock by it)", typ, took.Round(time.Millisecond), most)
		case acquireAnswered.Load():
			c.fail("ping-while-waiting", "%s sent while an acquire waited was answered only after the acquire (in %v): the reader must answer it at once (lockchaos maps the driver's clock by it)", typ, took.Round(time.Millisecond))
		case typ == "clock" && (m.MonoNS == 0 || m.WallNS == 0):
			c.fail("ping-while-waiting", "clock_ok without mono_ns or wall_ns (%d, %d)", m.MonoNS, m.WallNS)
		}
		c.res["ping-while-waiting"].Took += took
	}
	c.pass("ping-while-waiting", "")
}

// releaseFirst: client 0 releases k0; the key goes. A key there after the
// release with other contents is client 1's: an acquire it gave up at the
// waits check goes on in an idiom with no bound of its own (a Redisson
// lock(), a Python with), takes the key as it is freed and is let go at
// once, as the protocol asks; client 0's key, unchanged, is the failure.
func (c *checkRun) releaseFirst(ctx context.Context) {
	before, _ := c.o.Server.Admin.Dump(ctx, c.key("k0")).Result()
	m, took, err := c.call(c.a, Request{Type: "release", Key: c.key("k0"), Lease: c.leaseA}, c.bound(0))
	c.res["release"].Took = took
	if c.answered("release", "client 0's release of its live lease on k0", m, err, TypeReleased) {
		if after, err := c.o.Server.Admin.Dump(ctx, c.key("k0")).Result(); err == nil && after == before {
			c.fail("release", "released, yet %s is still at the server, as client 0's acquire left it", c.key("k0"))
			return
		}
		c.pass("release", "")
	}
}

// expiredRelease: client 0 acquires k1 and is stopped (SIGSTOP) for 2×TTL;
// client 1 takes k1; client 0, continued, releases: client 1's key stays.
func (c *checkRun) expiredRelease(ctx context.Context) {
	t0 := time.Now()
	defer func() { c.res["not-owner"].Took = time.Since(t0) }()
	k := c.key("k1")
	m, _, err := c.call(c.a, Request{Type: "acquire", Key: k, TTLMS: ms(c.o.TTL), WaitMS: ms(0)}, c.bound(0))
	if err != nil || m.Type != TypeAcquired {
		c.skip("not-owner", fmt.Sprintf("client 0 did not acquire k1 (%s %v)", m.Type, err))
		return
	}
	lease := m.Lease
	if _, err := c.a.freeze(); err != nil {
		c.skip("not-owner", "cannot stop client 0's process: "+err.Error())
		return
	}
	// Client 1 tries at once, every 100 ms, until client 0's lease has had
	// 2×TTL to expire (a library whose waiters wake only on a release,
	// python-redis-lock's BLPOP, would sleep through the expiry).
	wait := 2*c.o.TTL + 500*time.Millisecond
	var m2 Reply
	for end := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
		m2, _, err = c.call(c.b, Request{Type: "acquire", Key: k, TTLMS: ms(4 * c.o.TTL), WaitMS: ms(0)}, c.bound(0))
		if err != nil || m2.Type == TypeAcquired || time.Now().After(end) {
			break
		}
	}
	_ = c.a.thaw()
	if err != nil || m2.Type != TypeAcquired {
		c.skip("not-owner", fmt.Sprintf("client 1 could not take k1 while client 0 was stopped for %v (%s %v): its lease did not expire", wait, m2.Type, err))
		return
	}
	before := c.dumps(ctx)
	m3, _, err := c.call(c.a, Request{Type: "release", Key: k, Lease: lease}, c.bound(0))
	if err != nil {
		c.fail("not-owner", "client 0's release of its expired lease on k1: %v", err)
		return
	}
	after := c.dumps(ctx)
	var gone, changed []string
	for name, d := range before {
		switch a, ok := after[name]; {
		case !ok:
			gone = append(gone, name)
		case a != d:
			changed = append(changed, name)
		}
	}
	if len(gone)+len(changed) > 0 {
		slices.Sort(gone)
		slices.Sort(changed)
		c.fail("not-owner", "client 0's release of its expired lease on k1 (answered %s) took client 1's lock: deleted %v, changed %v: a release must check the owner", m3.Type, gone, changed)
		return
	}
	switch m3.Type {
	case TypeNotOwner:
		c.pass("not-owner", "")
	case TypeReleased:
		c.pass("not-owner", "answered released (the library reports nothing): not_owner says what happened")
	default:
		c.pass("not-owner", "answered "+m3.Type)
	}
	_, _, _ = c.call(c.b, Request{Type: "release", Key: k, Lease: m2.Lease}, c.bound(0))
}

// stoppedServer: with the server stopped, an acquire and a release are
// indeterminate or errors, within their bounds.
func (c *checkRun) stoppedServer(ctx context.Context) {
	k := c.key("k2")
	m, _, err := c.call(c.a, Request{Type: "acquire", Key: k, TTLMS: ms(c.o.TTL), WaitMS: ms(0)}, c.bound(0))
	if err != nil || m.Type != TypeAcquired {
		c.skip("stopped-server", fmt.Sprintf("client 0 did not acquire k2 (%s %v)", m.Type, err))
		return
	}
	if err := c.o.Server.Pause(); err != nil {
		c.skip("stopped-server", "cannot stop the server: "+err.Error())
		return
	}
	t0 := time.Now()
	acq, _, aerr := c.call(c.b, Request{Type: "acquire", Key: c.key("k3"), TTLMS: ms(c.o.TTL), WaitMS: ms(0)}, c.bound(0))
	rel, _, rerr := c.call(c.a, Request{Type: "release", Key: k, Lease: m.Lease}, c.bound(0))
	c.res["stopped-server"].Took = time.Since(t0)
	_ = c.o.Server.Resume()
	var bad []string
	if aerr == nil && acq.Type != TypeIndetermined && acq.Type != TypeError {
		bad = append(bad, fmt.Sprintf("acquire answered %s", acq.Type))
	}
	if rerr == nil && rel.Type != TypeIndetermined && rel.Type != TypeError {
		bad = append(bad, fmt.Sprintf("release answered %s", rel.Type))
	}
	if aerr != nil || rerr != nil {
		// no answer at all: the bounded check says so
		c.fail("stopped-server", "no answer from a driver whose server stopped (acquire: %v; release: %v)", aerr, rerr)
		return
	}
	if len(bad) > 0 && slices.Contains(c.hello.Capabilities, "multi-node") {
		// RedissonRedLock's tryLock answers false, and its unlock returns,
		// with every master silent: its library hides each master's error.
		c.skip("stopped-server", fmt.Sprintf("with its only master stopped, %s: a multi-node lock whose library hides each master's error (a no, not an exception); the driver cannot tell a refusal from silence, so lockchaos counts these as refusals", strings.Join(bad, ", ")))
		return
	}
	if len(bad) > 0 {
		c.fail("stopped-server", "with the server stopped, %s: the server answered nothing, so the outcome is unknown; answer indeterminate (the command may have run) or error", strings.Join(bad, ", "))
		return
	}
	c.pass("stopped-server", fmt.Sprintf("acquire %s, release %s", acq.Type, rel.Type))
	_ = ctx
}

// reset: the reset extension (warm drivers), on a third process (client
// 2): refused while it holds a lease; after reset_ok its connections are
// gone, and an init under another name (lc-check-c3) locks again.
func (c *checkRun) reset(ctx context.Context) {
	t0 := time.Now()
	defer func() { c.res["reset"].Took = time.Since(t0) }()
	if !slices.Contains(c.hello.Extensions, "reset") {
		c.skip("reset", "hello_ok.extensions does not list reset: lockchaos starts a process for every run")
		return
	}
	p, _, err := c.startOne(2)
	if err != nil {
		c.fail("reset", "a third process did not start: %v", err)
		return
	}
	defer func() { _ = p.stop() }()
	key := c.key("k-reset")
	hold := func(who string) (string, bool) {
		m, _, err := c.call(p, Request{Type: "acquire", Key: key, TTLMS: ms(c.o.TTL), WaitMS: ms(c.wait())}, c.bound(c.wait()))
		return m.Lease, c.answered("reset", who+"'s acquire of "+key, m, err, TypeAcquired)
	}
	lease, ok := hold("client 2")
	if !ok {
		return
	}
	m, _, err := c.call(p, Request{Type: "reset"}, StopGrace)
	switch {
	case err != nil:
		c.fail("reset", "reset while holding: %v", err)
		return
	case m.Type == TypeResetOK:
		c.fail("reset", "answered reset_ok while client 2 holds lease %s on %s: a renewer of a held lease would outlive the run; answer error until every lease is released", lease, key)
		return
	}
	if m, _, err := c.call(p, Request{Type: "release", Key: key, Lease: lease}, c.bound(0)); !c.answered("reset", "the release before reset", m, err, TypeReleased) {
		return
	}
	if m, _, err := c.call(p, Request{Type: "reset"}, StopGrace); !c.answered("reset", "reset with no lease held", m, err, TypeResetOK) {
		return
	}
	if c.named(ctx, "lc-check-c2", false) {
		c.fail("reset", "after reset_ok, a connection named lc-check-c2 (the run's init.conn_name) is still open 2 s later: reset closes the run's clients")
		return
	}
	client := 3
	o := InitOptions{TTLMS: c.o.TTL.Milliseconds(), AcquireTimeoutMS: c.wait().Milliseconds() + 200, CommandTimeoutMS: c.o.CommandTimeout.Milliseconds(),
		RetryDelayMS: 10, Extra: c.o.Extra}
	init := Request{Type: "init", Client: &client, ConnName: "lc-check-c3", KeyPrefix: c.prefix, Topology: "single",
		Endpoints: []EndpointMsg{{Addr: c.o.Server.Addr}}, Options: &o}
	if m, _, err := c.call(p, init, StartTimeout); !c.answered("reset", "the init after reset", m, err, TypeInitOK) {
		return
	}
	lease, ok = hold("the reset process")
	if !ok {
		return
	}
	if !c.named(ctx, "lc-check-c3", true) {
		c.fail("reset", "after the second init, no connection named lc-check-c3 (init.conn_name) holds %s: the new run's clients must carry the new name", key)
		return
	}
	if m, _, err := c.call(p, Request{Type: "release", Key: key, Lease: lease}, c.bound(0)); !c.answered("reset", "the release after the second init", m, err, TypeReleased) {
		return
	}
	c.pass("reset", "refused while holding; its connections closed; a fresh init locked again")
}

// named says whether a connection named name is listed (want true) or
// gone (want false) within 2 s.
func (c *checkRun) named(ctx context.Context, name string, want bool) bool {
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		list, err := c.o.Server.Admin.ClientList(ctx).Result()
		has := err == nil && strings.Contains(list, "name="+name+" ")
		if has == want || time.Now().After(end) {
			return has
		}
	}
}

// shutdown: both processes answer shutdown_ok and exit.
func (c *checkRun) shutdown() {
	t0 := time.Now()
	defer func() { c.res["shutdown"].Took = time.Since(t0) }()
	for i, p := range []*proc{c.a, c.b} {
		m, _, err := c.call(p, Request{Type: "shutdown"}, StopGrace)
		switch {
		case err != nil:
			c.fail("shutdown", "client %d: shutdown: %v", i, err)
		case m.Type != TypeShutdownOK:
			c.fail("shutdown", "client %d answered shutdown with %s: want shutdown_ok", i, m.Type)
		}
		p.killed.Store(true)
		_ = p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(StopGrace):
			c.fail("shutdown", "client %d's process did not exit within %v of shutdown", i, StopGrace)
		}
	}
	c.pass("shutdown", "")
}
