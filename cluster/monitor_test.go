package cluster

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/keyspace"
)

type eventSink struct {
	mu  sync.Mutex
	evs []history.Event
}

func (s *eventSink) record(e *history.Event) {
	s.mu.Lock()
	s.evs = append(s.evs, *e)
	s.mu.Unlock()
}

func (s *eventSink) snapshot() []history.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.evs)
}

// waitFor polls until cond holds on the recorded events (bounded).
func (s *eventSink) waitFor(t *testing.T, what string, cond func([]history.Event) bool) []history.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if evs := s.snapshot(); cond(evs) {
			return evs
		}
		time.Sleep(10 * time.Millisecond)
	}
	evs := s.snapshot()
	t.Fatalf("%s: not recorded within 5s; recorded %+v", what, evs)
	return nil
}

func commands(evs []history.Event) []history.Event {
	var out []history.Event
	for _, e := range evs {
		if e.Op == history.OpCommand && e.Cmd != nil {
			out = append(out, e)
		}
	}
	return out
}

// The command record sees every command on the run's keys with the client
// whose named connection ran it, a script's inner commands (a conditional
// DEL only when it ran), nothing of another prefix, and a gap when the node
// restarts, after which it resumes.
func TestRecordNamesEveryCommand(t *testing.T) {
	ctx := context.Background()
	c := startSingle(t)
	start := time.Now()
	toRun := func(x time.Time) int64 { return int64(x.Sub(start)) }
	now := func() int64 { return int64(time.Since(start)) }
	p := keyspace.Prefix("lc:run1:")
	var sink eventSink
	stop, st, err := Record(ctx, c, p, "run1", sink.record, now, toRun)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if st.Mode != RecordMonitor {
		t.Fatalf("mode %q, want %q", st.Mode, RecordMonitor)
	}
	ep := c.Endpoints()[0]
	a := c.NewClient(ep, ClientOptions{PoolSize: 1, Name: ConnName("run1", 3)})
	b := c.NewClient(ep, ClientOptions{PoolSize: 1, Name: ConnName("run1", 7)})
	other := c.NewClient(ep, ClientOptions{PoolSize: 1, Name: ConnName("run2", 3)})
	before := now()
	if err := a.SetNX(ctx, "lc:run1:k0", "tok-a", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := other.Set(ctx, "lc:run2:k0", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	unlock := redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	// b's compare-and-delete with the wrong token: GET only.
	if err := unlock.Run(ctx, b, []string{"lc:run1:k0"}, "tok-b").Err(); err != nil {
		t.Fatal(err)
	}
	// b's plain DEL "with \"quotes\"" in a value: a foreign delete.
	if err := b.Del(ctx, "lc:run1:k0").Err(); err != nil {
		t.Fatal(err)
	}
	// A library's own name before a lock key of the run is the run's;
	// of another run's, not.
	if err := a.Set(ctx, "lock.lc:run1:{k2}", "tok-c", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := other.Set(ctx, "lock.lc:run2:{k2}", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Set(ctx, "lc:run1:k1", "with \"quotes\"\n\x01", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := unlock.Run(ctx, a, []string{"lc:run1:k1"}, "with \"quotes\"\n\x01").Err(); err != nil {
		t.Fatal(err)
	}
	after := now()
	evs := sink.waitFor(t, "the last script", func(evs []history.Event) bool {
		return slices.ContainsFunc(evs, func(e history.Event) bool { return e.Key == "k1" && len(e.Cmd.Inner) == 2 })
	})
	cmds := commands(evs)
	for _, e := range cmds {
		if e.Key == "" || e.Node != c.Nodes[0].Name || e.Result != "" {
			t.Errorf("event %+v: want key, node %s and no result", e, c.Nodes[0].Name)
		}
		if e.T < before-int64(50*time.Millisecond) || e.T > after+int64(50*time.Millisecond) {
			t.Errorf("event at %d outside [%d, %d]: server time not mapped to the run clock", e.T, before, after)
		}
	}
	type row struct {
		client int
		key    string
		args   []string
		inner  [][]string
	}
	var got []row
	for _, e := range cmds {
		args := e.Cmd.Args
		if args[0] == "evalsha" || args[0] == "EVALSHA" || args[0] == "eval" || args[0] == "EVAL" {
			args = args[2:] // the sha or the body
		}
		got = append(got, row{e.Client, e.Key, args, e.Cmd.Inner})
	}
	want := []row{
		{3, "k0", []string{"set", "lc:run1:k0", "tok-a", "ex", "1", "nx"}, nil},
		{7, "k0", []string{"1", "lc:run1:k0", "tok-b"}, [][]string{{"GET", "lc:run1:k0"}}},
		{7, "k0", []string{"del", "lc:run1:k0"}, nil},
		{3, "lock.{k2}", []string{"set", "lock.lc:run1:{k2}", "tok-c"}, nil},
		{3, "k1", []string{"set", "lc:run1:k1", "with \"quotes\"\n\x01"}, nil},
		{3, "k1", []string{"1", "lc:run1:k1", "with \"quotes\"\n\x01"}, [][]string{{"GET", "lc:run1:k1"}, {"DEL", "lc:run1:k1"}}},
	}
	// go-redis may send the script as EVALSHA, get NOSCRIPT and send EVAL:
	// the NOSCRIPT try ran nothing (no inner command).
	got = slices.DeleteFunc(got, func(r row) bool { return len(r.args) == 3 && r.inner == nil && r.args[0] == "1" })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("record:\n got %+v\nwant %+v", got, want)
	}

	// A restart breaks the record: a gap, then it resumes and records again.
	if err := c.Nodes[0].Ctl.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Ctl.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "gap and resume", func(evs []history.Event) bool {
		gap := slices.IndexFunc(evs, func(e history.Event) bool { return e.Detail == history.CmdGap })
		res := slices.IndexFunc(evs, func(e history.Event) bool { return e.Detail == history.CmdResumed })
		return gap >= 0 && res > gap
	})
	c2 := c.NewClient(ep, ClientOptions{PoolSize: 1, Name: ConnName("run1", 9)})
	if err := c2.Set(ctx, "lc:run1:k2", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "a command after the restart", func(evs []history.Event) bool {
		return slices.ContainsFunc(evs, func(e history.Event) bool { return e.Key == "k2" && e.Client == 9 })
	})
}

func TestParseMonitorArgs(t *testing.T) {
	got, err := ParseMonitorArgs(`"SET" "a\"b" "\\x" "\x01\xff" "" "n\r\n"`)
	want := []string{"SET", `a"b`, `\x`, "\x01\xff", "", "n\r\n"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{`SET`, `"SET" "a`} {
		if _, err := ParseMonitorArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if ClientOfConnName("r1", ConnName("r1", 12)) != 12 || ClientOfConnName("r1", ConnName("r2", 12)) != -1 || ClientOfConnName("r1", "lc-r1-cx") != -1 {
		t.Error("ClientOfConnName does not invert ConnName")
	}
}

// A script is recorded at the time it began to run, its first command's
// stamp, not its EVAL line's: the server stamps the EVAL line when it takes
// the command and compiles the script after, so a script whose key expired
// in between found it gone. Here an EVAL whose body takes some 250 ms to
// compile takes a key set with a 50 ms TTL: recorded at its EVAL line, its
// SET would fall in the key's lifetime, a write over a live key (paused-
// master/watchdog in CI: a node frozen between the two did the same).
func TestRecordStampsAScriptWhenItRan(t *testing.T) {
	ctx := context.Background()
	c := startSingle(t)
	sink, stop := recordRun1(t, c)
	defer stop()
	ep := c.Endpoints()[0]
	holder := c.NewClient(ep, ClientOptions{PoolSize: 1, Name: ConnName("run1", 1)})
	taker := c.NewClient(ep, ClientOptions{PoolSize: 1, Name: ConnName("run1", 0), Timeout: 10 * time.Second})
	body := "local x = 0\n" + strings.Repeat("x = x + 1\n", 400_000) +
		"if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], 'mine') return 1 end return 0"
	const ttl = 50 * time.Millisecond
	if err := holder.Set(ctx, "lc:run1:k0", "theirs", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	took, err := taker.Eval(ctx, body, []string{"lc:run1:k0"}).Int()
	if err != nil {
		t.Fatal(err)
	}
	evs := sink.waitFor(t, "the script", func(evs []history.Event) bool {
		return slices.ContainsFunc(evs, func(e history.Event) bool { return e.Cmd != nil && len(e.Cmd.Inner) > 0 })
	})
	var set, script history.Event
	for _, e := range commands(evs) {
		if len(e.Cmd.Inner) > 0 {
			script = e
		} else {
			set = e
		}
	}
	if took != 1 {
		t.Skipf("the script compiled within the key's %v TTL on this machine: nothing to show", ttl)
	}
	if script.T < set.T+int64(ttl) {
		t.Fatalf("the script that found the key gone recorded %v after the SET with a %v TTL: stamped before the key expired",
			time.Duration(script.T-set.T), ttl)
	}
}

// A script's inner commands that reach the consumer late (the reader not
// yet scheduled on a loaded machine) stay the script's: only the reader's
// word that it read everything (readerIdle) starts the quiet that flushes
// a pending script. Before, 20 ms of the consumer's clock flushed it bare
// and the inner commands were dropped (a CI matrix: a release's GET and
// DEL lost, and the next release read as deleting a key it did not own).
func TestRecordKeepsInnerCommandsThatComeLate(t *testing.T) {
	var mu sync.Mutex
	var got []*history.Event
	m := &monitorNode{node: "n1", prefix: "p:", names: map[string]string{},
		now: func() int64 { return 0 }, toRun: func(t time.Time) int64 { return t.UnixNano() },
		record: func(e *history.Event) {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}}
	lines, errc := make(chan string, 16), make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.consume(ctx, lines, errc) }()
	lines <- `+1800000000.000100 [0 127.0.0.1:5] "EVALSHA" "abc" "1" "p:k" "t1"` + "\n"
	time.Sleep(60 * time.Millisecond) // the reader late: no readerIdle yet
	lines <- `+1800000000.000110 [0 lua] "GET" "p:k"` + "\n"
	lines <- `+1800000000.000120 [0 lua] "DEL" "p:k"` + "\n"
	lines <- readerIdle
	time.Sleep(60 * time.Millisecond) // quiet: the script is flushed whole
	mu.Lock()
	n := len(got)
	mu.Unlock()
	lines <- `+1800000000.000200 [0 127.0.0.1:6] "SET" "p:k" "t2" "NX"` + "\n"
	time.Sleep(20 * time.Millisecond)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if n != 1 {
		t.Errorf("%d events recorded in the quiet after the reader's idle: want the script, flushed", n)
	}
	if len(got) != 2 || len(got[0].Cmd.Inner) != 2 || got[1].Cmd.Args[0] != "SET" {
		for _, e := range got {
			t.Logf("%v inner %v", e.Cmd.Args, e.Cmd.Inner)
		}
		t.Fatalf("%d events: want the EVALSHA with its GET and DEL, then the SET", len(got))
	}
}

// recordRun1 starts the command record of run "run1" (prefix lc:run1:) on c.
func recordRun1(t *testing.T, c *Cluster) (*eventSink, func()) {
	t.Helper()
	return recordRun1Ctx(t, context.Background(), c)
}

// recordRun1Ctx is recordRun1 under ctx (the run's: Ctrl-C cancels it).
func recordRun1Ctx(t *testing.T, ctx context.Context, c *Cluster) (*eventSink, func()) {
	t.Helper()
	start := time.Now()
	toRun := func(x time.Time) int64 { return int64(x.Sub(start)) }
	now := func() int64 { return int64(time.Since(start)) }
	sink := &eventSink{}
	stop, _, err := Record(ctx, c, keyspace.Prefix("lc:run1:"), "run1", sink.record, now, toRun)
	if err != nil {
		t.Fatal(err)
	}
	return sink, stop
}

// TestRecordStopKeepsTheTail: a record stopped as soon as the last command
// was answered still has every command. The server writes a command's
// MONITOR line before its reply, but the record reads it later: a stop that
// cancelled at once dropped what was read and not yet handled (the last
// releases of a run). A run interrupted (Ctrl-C cancels its context before
// its clean-up stops the record) keeps them too: the record ended with the
// context, before its stop could drain it.
func TestRecordStopKeepsTheTail(t *testing.T) {
	for _, interrupted := range []bool{false, true} {
		t.Run(fmt.Sprintf("interrupted=%v", interrupted), func(t *testing.T) {
			ctx := context.Background()
			c := startSingle(t)
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			sink, stop := recordRun1Ctx(t, runCtx, c)
			a := c.NewClient(c.Endpoints()[0], ClientOptions{PoolSize: 1, Name: ConnName("run1", 0)})
			defer a.Close()
			const n = 5000
			pipe := a.Pipeline()
			for i := range n {
				pipe.Set(ctx, fmt.Sprintf("lc:run1:k%d", i), "v", 0)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if interrupted {
				cancel()
			}
			stop()
			got := 0
			for _, e := range commands(sink.snapshot()) {
				if strings.EqualFold(e.Cmd.Args[0], "SET") {
					got++
				}
			}
			if got != n {
				t.Fatalf("recorded %d of the %d SETs answered before the record stopped", got, n)
			}
		})
	}
}

// TestRecordStopIsBoundedOnAFrozenNode: a node that does not answer (frozen
// by SIGSTOP as the run stops) holds the record's stop at most endWait.
func TestRecordStopIsBoundedOnAFrozenNode(t *testing.T) {
	c := startSingle(t)
	_, stop := recordRun1(t, c)
	n := c.Nodes[0]
	if err := n.Ctl.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Ctl.Resume() }()
	began := time.Now()
	stop()
	if d := time.Since(began); d > endWait+500*time.Millisecond {
		t.Fatalf("the stop took %v on a frozen node: want at most %v", d, endWait)
	}
}
