// Package faults holds the fault kinds, the seeded scheduler that fires them,
// and the recording of each fault's request and measured effect. It drives
// the cluster's node primitives and the workload's client controls; it knows
// nothing of lock internals.
//
// Each kind is one file, named after it without its hyphens (clock-jump:
// clockjump.go), that registers the whole kind in one Register(Kind{…}),
// with its test beside it; what the kinds of a family share is in the
// family's file (client.go, node.go, net.go, clock.go). CONTRIBUTING's
// recipe says so and contributing_test.go holds it to that.
package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// Spec is one fault as a scenario asks for it. Times are offsets from the
// start of the workload phase.
type Spec struct {
	Kind string `yaml:"kind" json:"kind"`
	// At is when it first fires.
	At time.Duration `yaml:"at" json:"at,omitempty"`
	// Every repeats it at this interval (Count times, or until the workload
	// phase ends when Count is 0).
	Every time.Duration `yaml:"every" json:"every,omitempty"`
	// Count is how many times it fires (with Every or Random). Default 1.
	Count int `yaml:"count" json:"count,omitempty"`
	// Random, when set, fires it Count times at seeded random offsets in
	// [Random[0], Random[1]).
	Random []time.Duration `yaml:"random" json:"random,omitempty"`
	// Duration is how long the fault lasts before it heals (0: instantaneous
	// or until the heal phase, per kind).
	Duration time.Duration `yaml:"duration" json:"duration,omitempty"`
	// Target: holder | random-client | any-client (point faults) | client:N | master | replica | node:N |
	// random-node | minority | majority | all. Default per kind.
	Target string `yaml:"target" json:"target,omitempty"`
	// Point, for client faults: where the client is frozen or crashed
	// (now | after-acquire | before-write | before-release | in-acquire |
	// in-release).
	Point string `yaml:"point" json:"point,omitempty"`
	// When, if set, holds each firing back from its offset until a client
	// reaches a point of its cycle: "client:N POINT" or "any-client POINT"
	// (POINT as in Point, not now), e.g. "client:0 after-acquire" restarts a
	// node while client 0 holds. A firing waits at most until the next one
	// of the same spec (Every), else until the workload phase ends; a
	// trigger never reached is recorded as a fault that did not take effect.
	When string `yaml:"when" json:"when,omitempty"`
	// Params are kind-specific (delta, rate, latency, jitter, commands,
	// mode, empty, delay, nodes, ...).
	Params map[string]string `yaml:"params" json:"params,omitempty"`
}

// Scheduled is one firing of a fault, resolved from a Spec and the seed.
type Scheduled struct {
	ID   int  `json:"id"`
	Spec Spec `json:"spec"`
	// Of is the index of its spec in the scenario's faults (firings of one
	// spec share it).
	Of       int           `json:"of"`
	At       time.Duration `json:"at"`
	Duration time.Duration `json:"duration"`
}

// ClientControl is what the workload lets faults do to its clients.
type ClientControl interface {
	// IDs are the clients this process drives, in order (0..n-1 in one
	// process; a worker's share of them, I, I+N, ..., in a worker).
	IDs() []int
	// Holders returns the clients that currently hold a lock (believe so).
	Holders() []int
	// Pause arms a freeze for d at point ("now": at the next step) in each
	// of clients cs; the first of them to reach the point is frozen, the
	// others are disarmed. The channel yields that client and its actual
	// pause window once it resumed, or is closed without a value if none
	// reached the point before ctx ended.
	Pause(ctx context.Context, cs []int, point string, d time.Duration) <-chan Hit
	// Crash makes the first of clients cs to reach point stop for good (its
	// process "dies"): it does not release what it holds. Same channel
	// contract as Pause, with the crash time in From and To.
	Crash(ctx context.Context, cs []int, point string) <-chan Hit
	// Watch reports the first of clients cs to reach point, and when, without
	// stopping it: the trigger of a fault with When. Same channel contract.
	Watch(ctx context.Context, cs []int, point string) <-chan Hit
	// BlockLoop is Pause for a client whose lock runs in a process with an
	// event loop (a Node driver): the client is frozen for d and the
	// process's event loop is blocked instead of the process stopped.
	// Same channel contract; the Hit's Effect has EffectReason when the
	// loop could not be blocked.
	BlockLoop(ctx context.Context, cs []int, point string, d time.Duration) <-chan Hit
	// Cancel cancels the request of the first of clients cs to reach
	// point in a cycle: the lock call in flight sees its context done,
	// and the release deferred with it gets the cancelled context. Same
	// channel contract, the cancel's time in From and To; the Hit's
	// Effect names the call (history.EffectCall), or has EffectReason
	// when the client's lock cannot be cancelled. A lock in a driver
	// process is cancelled through the protocol (its cancel extension):
	// at in-acquire and in-release, delay after its call was sent; the
	// Hit then comes when the call answered, To its answer's time, and
	// says whether the cancel reached it (history.EffectDelivered).
	Cancel(ctx context.Context, cs []int, point string, delay time.Duration) <-chan Hit
	// Throw makes the critical section of the first of clients cs to reach
	// point raise: the rest of it is skipped and the lock is released on
	// the exception path (a Go deferred release recovering the panic; a
	// driver's idiom, through the protocol's throw extension). Same
	// channel contract; the Hit comes once that release answered, its
	// Effect says what the lock did with the exception.
	Throw(ctx context.Context, cs []int, point string) <-chan Hit
	// Terminate stops the process of the first of clients cs to reach
	// point with SIGTERM, and kills it if it has not ended after grace;
	// the client acts no more. On a lock in a driver process in-acquire and
	// in-release are the driver's call in flight, delay after its request.
	// Same channel contract; the Hit comes when the process ended (To),
	// its Effect says how, or has EffectReason for a lock with no process
	// of its own.
	Terminate(ctx context.Context, cs []int, point string, delay, grace time.Duration) <-chan Hit
	// SetClock skews client c's clock (offset, rate; 0,1 = real), and its
	// lock's process's clock when the lock runs in one, returning what
	// was measured inside that process; an error says the process's clock
	// did not take it.
	SetClock(c int, offset time.Duration, rate float64) (map[string]string, error)
	// Stall delays the listed commands (lower-case names; empty = all) of
	// client c by d each until undo is called.
	Stall(c int, commands []string, d time.Duration) (undo func() map[string]string)
	// Cut makes client c's connections to the given nodes fail (reset) or
	// hang (drop) until undo is called.
	Cut(c int, nodes []int, mode string) (undo func(), err error)
}

// Hit is a client reaching an armed point: which client, and the window in
// run ns (From == To for a crash or a watch).
type Hit struct {
	Client   int
	From, To int64
	// Effect is what a lock in a process of its own measured of the
	// fault (lockimpl.Process): the stopped process's state, its kill.
	Effect map[string]string
}

// NewRand is Env.Rand for a run's seed: a seeded source behind a mutex,
// since faults that fire together draw from it together (two pause-client
// faults of one schedule did, found by lockchaos explore under -race).
func NewRand(seed uint64) *rand.Rand {
	return rand.New(&lockedSource{src: rand.NewPCG(seed, 0xfa017)})
}

type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (l *lockedSource) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src.Uint64()
}

// Env is what an injector acts on.
type Env struct {
	Cluster *cluster.Cluster
	Clients ClientControl
	// Rand picks targets. Faults fire in goroutines of their own and two
	// can resolve a target at once: make it with NewRand (a locked source).
	Rand *rand.Rand
	TTL  time.Duration
	// Now is the run clock (ns since run start).
	Now func() int64
	// Record appends to the history.
	Record func(*history.Event)
	// KeyPattern is the SCAN MATCH glob of the run's keys: faults that act
	// on keys (server clock jumps) touch these only, never a user's other
	// keys. "" means every key (tests on servers they started).
	KeyPattern string
}

// Injector is one fault instance: Start applies it and measures its effect;
// Heal undoes it (a no-op for instantaneous faults).
type Injector interface {
	Start(ctx context.Context, env *Env) (Outcome, error)
	Heal(ctx context.Context, env *Env) (map[string]string, error)
}

// Outcome is what Start measured.
type Outcome struct {
	Target  string
	Effect  map[string]string
	Applied bool
}

// Kind describes a registered fault kind.
type Kind struct {
	Name        string
	Description string
	// Validate checks a Spec's target and params, naming the bad field.
	Validate func(s Spec) error
	// New builds the injector for one firing, parsing the spec's params
	// into the injector's typed fields: the one parse of them. Validate
	// (the package function) calls it too, so a bad param is reported
	// before anything starts, naming the field.
	New func(s Scheduled) (Injector, error)
	// Outlasts: its effect runs its whole duration even past the workload
	// phase (a freeze cannot be cut short); other kinds are healed when the
	// workload phase ends. See ValidateRun.
	Outlasts bool
	// Topologies, when set, are the only topologies the kind works in.
	Topologies []string
	// Needs is what the kind needs from the cluster; the runner starts the
	// cluster with the union of its scenario's faults' needs.
	Needs Needs
	// Instant: its Start is its whole effect (a call cancelled, a client
	// killed, a node restarted, a pause that Start sits through) and its
	// Heal undoes nothing, so it has settled once its firing ended: the
	// recovery window counts from then (Runner.Settled), not from the
	// formal heal at the workload's end.
	Instant bool
	// Serial: firings of one spec never overlap. A firing due while the
	// previous one is still under way (its Start, and its heal when it has
	// a duration: a container restart outlasting the period) waits for it
	// before it arms its trigger or starts, and records how long it waited
	// (waited_for_previous_ms).
	Serial bool
}

// Needs are what fault kinds need from the cluster they act on.
type Needs struct {
	// Proxy: the fault proxy in front of every node (cluster Spec.Proxy).
	Proxy bool
	// Links: each client's own proxy to every node (cluster Spec.Links).
	Links bool
	// RealClock: each server its own clock, where the backend can
	// (cluster Spec.RealClock); without it the kind falls back.
	RealClock bool
}

// NeedsOf is the union of the needs of specs' kinds.
func NeedsOf(specs []Spec) Needs {
	var n Needs
	for _, s := range specs {
		k := kinds[s.Kind].Needs
		n.Proxy, n.Links, n.RealClock = n.Proxy || k.Proxy, n.Links || k.Links, n.RealClock || k.RealClock
	}
	return n
}

var kinds = map[string]Kind{}

// Register adds a fault kind (called from init).
func Register(k Kind) {
	if _, dup := kinds[k.Name]; dup {
		panic("faults.Register: duplicate kind " + k.Name)
	}
	kinds[k.Name] = k
}

// Kinds lists the registered kinds, sorted by name.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Validate checks a spec: known kind, sane timing, kind-specific fields.
// Errors name the field and the value.
func Validate(s Spec, i int) error {
	k, ok := kinds[s.Kind]
	if !ok {
		names := make([]string, 0, len(kinds))
		for n := range kinds {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("faults[%d].kind: %q is not a fault kind (known: %s)", i, s.Kind, strings.Join(names, ", "))
	}
	switch {
	case s.At < 0:
		return fmt.Errorf("faults[%d].at: %v is negative", i, s.At)
	case s.Every < 0:
		return fmt.Errorf("faults[%d].every: %v is negative", i, s.Every)
	case s.Count < 0:
		return fmt.Errorf("faults[%d].count: %d is negative", i, s.Count)
	case s.Duration < 0:
		return fmt.Errorf("faults[%d].duration: %v is negative", i, s.Duration)
	case len(s.Random) != 0 && (len(s.Random) != 2 || s.Random[1] <= s.Random[0] || s.Random[0] < 0):
		return fmt.Errorf("faults[%d].random: %v is not [from, to) with 0 <= from < to", i, s.Random)
	}
	if s.When != "" {
		if _, _, _, err := parseWhen(s.When); err != nil {
			return fmt.Errorf("faults[%d].when: %w", i, err)
		}
	}
	if k.Validate != nil {
		if err := k.Validate(s); err != nil {
			return fmt.Errorf("faults[%d] (%s): %w", i, s.Kind, err)
		}
	}
	if _, err := k.New(Scheduled{Spec: s, At: s.At, Duration: s.Duration}); err != nil {
		return fmt.Errorf("faults[%d] (%s): %w", i, s.Kind, err)
	}
	return nil
}

// Resolve turns specs into a seeded, sorted schedule of firings within the
// workload phase of length span.
func Resolve(specs []Spec, seed uint64, span time.Duration) []Scheduled {
	r := rand.New(rand.NewPCG(seed, 0x6c6f636b6368616f))
	var out []Scheduled
	for si, s := range specs {
		count := s.Count
		if count == 0 {
			count = 1
			if s.Every > 0 {
				count = int((span-s.At)/s.Every) + 1
			}
		}
		for i := 0; i < count; i++ {
			at := s.At + time.Duration(i)*s.Every
			if len(s.Random) == 2 {
				at = s.Random[0] + time.Duration(r.Int64N(int64(s.Random[1]-s.Random[0])))
			}
			if at >= span {
				break
			}
			out = append(out, Scheduled{Spec: s, Of: si, At: at, Duration: s.Duration})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	for i := range out {
		out[i].ID = i + 1
	}
	return out
}

// Runner fires a schedule and heals what is still active at the end.
type Runner struct {
	env     *Env
	mu      sync.Mutex
	serial  map[int]chan struct{} // spec index → held while a Serial kind's firing starts
	active  map[int]activeFault
	wg      sync.WaitGroup
	applied int
	failed  int
	// settled is when the latest firing or heal ended (run ns): once
	// HealAll returned, every fault had healed by then.
	settled int64
}

type activeFault struct {
	s   Scheduled
	inj Injector
}

// NewRunner prepares a runner over env.
func NewRunner(env *Env) *Runner {
	return &Runner{env: env, active: map[int]activeFault{}, serial: map[int]chan struct{}{}}
}

// turn waits (bounded by ctx) until no other firing of s's spec is
// starting, and returns the release and how long it waited; ok is false
// when ctx ended first.
func (r *Runner) turn(ctx context.Context, s Scheduled) (release func(), waited time.Duration, ok bool) {
	r.mu.Lock()
	ch := r.serial[s.Of]
	if ch == nil {
		ch = make(chan struct{}, 1)
		r.serial[s.Of] = ch
	}
	r.mu.Unlock()
	t0 := time.Now()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, time.Since(t0), true
	case <-ctx.Done():
		return nil, time.Since(t0), false
	}
}

// Start fires every scheduled fault at its offset from start (run ns) in the
// background. Faults past ctx's end do not fire; each is recorded as a fault
// that did not take effect.
func (r *Runner) Start(ctx context.Context, start int64, sched []Scheduled) {
	for _, s := range sched {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			wait := time.Duration(start + int64(s.At) - r.env.Now())
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					// Recorded, so that the run cannot pass as if it had
					// fired: the checker makes it unknown.
					r.record(s, nil, r.env.Now(), Outcome{Target: s.Spec.Target, Effect: map[string]string{
						history.EffectReason: "never fired: the workload phase ended (the run was cut short) before its time " + s.At.String()}}, nil, nil)
					return
				case <-t.C:
				}
			}
			r.fire(ctx, s)
		}()
	}
}

func (r *Runner) fire(ctx context.Context, s Scheduled) {
	k := kinds[s.Spec.Kind]
	inj, err := k.New(s)
	if err != nil {
		// Validate ran New on the same spec: a spec that reaches here
		// unvalidated is recorded as a fault that did not take effect.
		r.record(s, nil, r.env.Now(), Outcome{Target: s.Spec.Target, Effect: map[string]string{history.EffectError: err.Error()}}, nil, nil)
		return
	}
	var trigger map[string]string
	if k.Serial {
		release, waited, ok := r.turn(ctx, s)
		if !ok {
			r.record(s, nil, r.env.Now(), Outcome{Target: s.Spec.Target, Effect: map[string]string{
				history.EffectReason: fmt.Sprintf("never fired: the previous firing of its spec was still starting when the workload phase ended (waited %v)", waited.Round(time.Millisecond))}}, nil, nil)
			return
		}
		defer release()
		if waited >= time.Millisecond {
			trigger = map[string]string{"waited_for_previous_ms": strconv.FormatInt(waited.Milliseconds(), 10)}
		}
	}
	if s.Spec.When != "" {
		tr, ok := r.awaitTrigger(ctx, s)
		for k, v := range trigger {
			tr[k] = v
		}
		trigger = tr
		if !ok {
			r.record(s, nil, r.env.Now(), Outcome{Target: s.Spec.Target, Effect: trigger}, nil, nil)
			return
		}
	}
	t := r.env.Now()
	out, err := inj.Start(ctx, r.env)
	r.record(s, inj, t, out, err, trigger)
	if s.Duration > 0 {
		// The fault lasts Duration from its firing; a Start that blocked
		// through it (a pause measured until the client resumed) is healed
		// at once.
		t := time.NewTimer(max(s.Duration-time.Duration(r.env.Now()-t), 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return // healed by HealAll
		case <-t.C:
		}
		r.heal(context.WithoutCancel(ctx), s.ID)
	}
}

// awaitTrigger waits for the client point of s.Spec.When: until the next
// firing of the same spec is due (Every), else until ctx ends. It returns
// what the trigger was and whether it came.
func (r *Runner) awaitTrigger(ctx context.Context, s Scheduled) (map[string]string, bool) {
	who, point, delay, _ := parseWhen(s.Spec.When)
	eff := map[string]string{"when": s.Spec.When}
	cs, err := pointTargets(r.env, who)
	if err != nil {
		eff[history.EffectReason] = "trigger: " + err.Error()
		return eff, false
	}
	wctx, cancel, bound := ctx, context.CancelFunc(func() {}), "before the workload phase ended"
	if s.Spec.Every > 0 {
		wctx, cancel = context.WithTimeout(ctx, s.Spec.Every)
		bound = "within " + s.Spec.Every.String() + " (every)"
	}
	defer cancel()
	h, ok := <-r.env.Clients.Watch(wctx, cs, point)
	if !ok {
		eff[history.EffectReason] = fmt.Sprintf("trigger %q not reached %s", s.Spec.When, bound)
		return eff, false
	}
	eff["triggered_by"] = fmt.Sprintf("client %d", h.Client)
	eff["triggered_at_ms"] = ms(h.From)
	if delay > 0 {
		select {
		case <-ctx.Done():
			eff[history.EffectReason] = fmt.Sprintf("trigger %q: the run ended within its delay", s.Spec.When)
			return eff, false
		case <-time.After(delay):
		}
	}
	return eff, true
}

// parseWhen splits "client:N POINT" / "any-client POINT", or a renewal
// trigger, "WHO renewal N [+DELAY]": DELAY after the N-th renewal of a
// hold answered ok (RenewalPoint), to time a fault just after a renewal
// or, with DELAY near the renew interval, just before the next one.
func parseWhen(w string) (who, point string, delay time.Duration, err error) {
	f := strings.Fields(w)
	if len(f) >= 3 && f[1] == "renewal" {
		return parseRenewalWhen(w, f)
	}
	if len(f) != 2 {
		return "", "", 0, fmt.Errorf("%q is not \"client:N POINT\", \"any-client POINT\" or \"WHO renewal N [+DELAY]\"", w)
	}
	if err := validPointTarget(f[0]); err != nil || f[0] == "holder" || f[0] == "random-client" {
		return "", "", 0, fmt.Errorf("%q: the client must be client:N or any-client", w)
	}
	if err := validPoint(f[1]); err != nil || f[1] == history.PointNow {
		return "", "", 0, fmt.Errorf("%q: the point must be one of %s, or renewal N", w, strings.Join(history.Points, ", "))
	}
	return f[0], f[1], 0, nil
}

func parseRenewalWhen(w string, f []string) (who, point string, delay time.Duration, err error) {
	if err := validPointTarget(f[0]); err != nil || f[0] == "holder" || f[0] == "random-client" {
		return "", "", 0, fmt.Errorf("%q: the client must be client:N or any-client", w)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 1 || n > 100 {
		return "", "", 0, fmt.Errorf("%q: the renewal must be a number from 1 to 100, not %q", w, f[2])
	}
	if len(f) > 4 {
		return "", "", 0, fmt.Errorf("%q is not \"WHO renewal N [+DELAY]\"", w)
	}
	if len(f) == 4 {
		d, err := time.ParseDuration(strings.TrimPrefix(f[3], "+"))
		if !strings.HasPrefix(f[3], "+") || err != nil || d < 0 || d > time.Minute {
			return "", "", 0, fmt.Errorf("%q: the delay must be +DURATION from 0 to 1m, not %q", w, f[3])
		}
		delay = d
	}
	return f[0], RenewalPoint(n), delay, nil
}

// RenewalPoint is the trigger point of a client's n-th renewal of a hold
// answered ok (a lock's Env.Note, a driver's renewal event): watched only,
// never a point a client fault stops a client at (the renewal runs on the
// lock's own goroutine or process).
func RenewalPoint(n int) string { return "renewal:" + strconv.Itoa(n) }

// record appends a firing to the history and, when inj ran, tracks it as
// active so that it is healed.
func (r *Runner) record(s Scheduled, inj Injector, t int64, out Outcome, err error, trigger map[string]string) {
	f := &history.Fault{ID: s.ID, Kind: s.Spec.Kind, Target: out.Target, Request: request(s), Effect: out.Effect, Applied: out.Applied && err == nil}
	if err != nil || len(trigger) > 0 {
		if f.Effect == nil {
			f.Effect = map[string]string{}
		}
		for k, v := range trigger {
			f.Effect[k] = v
		}
		if err != nil {
			f.Effect[history.EffectError] = err.Error()
		}
	}
	end := r.env.Now()
	r.env.Record(&history.Event{T: t, End: end, Client: -1, Op: history.OpFault, Fault: f, Node: nodeOf(out.Target)})
	r.mu.Lock()
	r.settled = max(r.settled, end)
	if f.Applied {
		r.applied++
	} else {
		r.failed++
	}
	if inj != nil {
		r.active[s.ID] = activeFault{s, inj}
	}
	r.mu.Unlock()
}

func nodeOf(target string) string {
	if n, ok := strings.CutPrefix(target, "node "); ok {
		return n
	}
	return ""
}

func request(s Scheduled) map[string]string {
	m := map[string]string{"at": s.At.String()}
	if s.Duration > 0 {
		m["duration"] = s.Duration.String()
	}
	if s.Spec.Target != "" {
		m["target"] = s.Spec.Target
	}
	if s.Spec.Point != "" {
		m["point"] = s.Spec.Point
	}
	if s.Spec.When != "" {
		m["when"] = s.Spec.When
	}
	for k, v := range s.Spec.Params {
		m[k] = v
	}
	return m
}

func (r *Runner) heal(ctx context.Context, id int) {
	r.mu.Lock()
	a, ok := r.active[id]
	delete(r.active, id)
	r.mu.Unlock()
	if !ok {
		return
	}
	t := r.env.Now()
	eff, err := a.inj.Heal(ctx, r.env)
	if err != nil {
		if eff == nil {
			eff = map[string]string{}
		}
		eff[history.EffectError] = err.Error()
	}
	end := r.env.Now()
	r.env.Record(&history.Event{T: t, End: end, Client: -1, Op: history.OpHeal,
		Fault: &history.Fault{ID: id, Kind: a.s.Spec.Kind, Effect: eff, Applied: err == nil}})
	if !kinds[a.s.Spec.Kind].Instant {
		r.mu.Lock()
		r.settled = max(r.settled, end)
		r.mu.Unlock()
	}
}

// Settled is when the last of the faults' firings and heals ended (run
// ns; 0 when none fired). After HealAll every fault had healed by then:
// the recovery window (scenarios.Scenario.Recovery) counts from it.
func (r *Runner) Settled() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.settled
}

// HealAll waits for firing goroutines (their ctx must be done) and heals every
// fault still active, in reverse order of firing.
func (r *Runner) HealAll(ctx context.Context) {
	r.wg.Wait()
	r.mu.Lock()
	ids := make([]int, 0, len(r.active))
	for id := range r.active {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	sort.Sort(sort.Reverse(sort.IntSlice(ids)))
	for _, id := range ids {
		r.heal(ctx, id)
	}
}

// Active is the number of faults in effect now.
func (r *Runner) Active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}

// Counts reports how many faults took effect and how many did not.
func (r *Runner) Counts() (applied, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied, r.failed
}
