package driver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// The fake drivers of these tests are this test binary run again with
// LOCKCHAOS_FAKE_DRIVER set to a mode (TestMain): they test the adapter's
// handling of the protocol, not a lock. Modes:
//
//	good        a lock in memory: acquires key "busy" never, "unknown"
//	            indeterminately, any other key at once (pushing a renewal,
//	            then lost, for key "lose"); release of a lost lease: not_owner;
//	            an acquire of key "count-releases" answers indeterminate with
//	            "releases N", the release requests it has had
//	crash       writes to stderr and exits 3 before hello
//	malformed   answers hello, then writes a line that is not JSON
//	wrong-id    answers hello with another id
//	never       answers hello and init, never an acquire
//	break       answers an acquire with "released"
//	event       answers hello, then pushes an unknown event
//	init-refused    answers init with an error (an option it refuses)
//	unreachable     answers init with an error and unavailable: true (it
//	                could not connect)
//	reset       good, with the reset extension (warm drivers): reset_ok
//	            always; an acquire of "count-inits" answers indeterminate
//	            with "inits N"
//	tasks       good, with the tasks extension (several clients a process):
//	            an acquire of "whoami" answers indeterminate with "client C
//	            inits N pid P", C the request's client
//	faketime    its clock request reads libfaketime's timestamp file as
//	            libfaketime would (a Go program's clocks do not pass libc);
//	            it declares block_loop and sleeps through one
const fakeEnv = "LOCKCHAOS_FAKE_DRIVER"

func fakeMain(mode string) {
	base := time.Now()
	mono := func() int64 { return int64(time.Since(base)) }
	out := bufio.NewWriter(os.Stdout)
	send := func(m map[string]any) {
		b, _ := json.Marshal(m)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	if mode == "crash" {
		fmt.Fprintln(os.Stderr, "fake: cannot load the library: boom")
		os.Exit(3)
	}
	sc := bufio.NewScanner(os.Stdin)
	n := 0
	lost := map[string]bool{}
	releases := 0
	inits := 0
	for sc.Scan() {
		var req map[string]any
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "fake: bad request", err)
			os.Exit(2)
		}
		id := int64(req["id"].(float64))
		typ := req["type"].(string)
		reply := func(t string, kv ...any) {
			m := map[string]any{"in_reply_to": id, "type": t, "t0": mono(), "t1": mono()}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			send(m)
		}
		switch {
		case typ == "hello" && mode == "wrong-id":
			id += 7
			reply("hello_ok")
		case typ == "hello":
			reply("hello_ok", "protocol", 1, "name", "fake-"+mode, "library", "fakelib", "version", "0.0.1", "language", "go",
				"capabilities", []string{"renews"}, "reports", []string{"deadline", "lost", "fence", "renewals"}, "options", []string{"flavour"},
				"extensions", map[string][]string{"faketime": {"block_loop"}, "reset": {"reset"}, "tasks": {"tasks"}}[mode])
			switch mode {
			case "malformed":
				fmt.Fprintln(os.Stdout, "not json")
			case "event":
				send(map[string]any{"type": "surprise"})
			}
		case typ == "ping":
			reply("pong")
		case typ == "clock":
			reply("clock_ok", "mono_ns", mono(), "wall_ns", fakeWall(mode, base))
		case typ == "block_loop" && mode == "faketime":
			t0 := mono()
			time.Sleep(time.Duration(req["ms"].(float64)) * time.Millisecond)
			reply("block_loop_ok", "t0", t0, "t1", mono())
		case typ == "init" && mode == "init-refused":
			reply("error", "error", "unsupported: topology single")
		case typ == "init" && mode == "unreachable":
			reply("error", "error", "connect: Connection refused: /127.0.0.1:1", "unavailable", true)
		case typ == "init":
			inits++
			reply("init_ok", "inits", inits)
		case typ == "reset" && mode == "reset":
			reply("reset_ok")
		case typ == "shutdown":
			reply("shutdown_ok")
			return
		case typ == "acquire" && mode == "never":
			// no answer
		case typ == "acquire" && mode == "break":
			reply("released")
		case typ == "acquire":
			key := req["key"].(string)
			switch key {
			case "busy":
				reply("not_acquired")
			case "unknown":
				reply("indeterminate", "error", "timeout after 250ms")
			case "count-releases":
				reply("indeterminate", "error", fmt.Sprintf("releases %d", releases))
			case "count-inits":
				reply("indeterminate", "error", fmt.Sprintf("inits %d", inits))
			case "whoami":
				c := -1
				if v, ok := req["client"].(float64); ok {
					c = int(v)
				}
				reply("indeterminate", "error", fmt.Sprintf("client %d inits %d pid %d", c, inits, os.Getpid()))
			case "own.k1":
				// A library that names its own key: it says so.
				reply("acquired", "lease", "own", "token", "tok-own", "depth", 1, "keys", []string{"lib:" + key})
			default:
				n++
				lease := fmt.Sprintf("L%d", n)
				ttl := int64(req["ttl_ms"].(float64)) * int64(time.Millisecond)
				reply("acquired", "lease", lease, "token", "tok-"+lease, "depth", 1, "fence", n, "deadline_ns", mono()+ttl)
				if key == "lose" {
					t0 := mono()
					send(map[string]any{"type": "renewal", "lease": lease, "t0": t0, "t1": t0 + int64(time.Millisecond), "outcome": "ok", "deadline_ns": t0 + 2*ttl})
					send(map[string]any{"type": "lost", "lease": lease, "t": mono(), "reason": "key gone"})
					lost[lease] = true
				}
			}
		case typ == "release":
			releases++
			if lost[req["lease"].(string)] {
				reply("not_owner")
			} else {
				reply("released")
			}
		default:
			reply("error", "error", "unsupported: "+typ)
		}
	}
}

// fakeSpec is the spec of a fake driver in mode.
func fakeSpec(mode string) *Spec {
	exe, _ := os.Executable()
	return &Spec{Name: "fake-" + strings.ReplaceAll(mode, " ", "-"), Command: []string{exe, "-test.run=^$"},
		Env: map[string]string{fakeEnv: mode}, base: os.TempDir()}
}

// fakeWall is the fake's wall clock: the real one, or in mode faketime
// what libfaketime makes of its timestamp file ("+O xR": S + O + (now − S) × R
// for the process's start S).
func fakeWall(mode string, start time.Time) int64 {
	now := time.Now()
	if mode != "faketime" {
		return now.UnixNano()
	}
	b, _ := os.ReadFile(os.Getenv("FAKETIME_TIMESTAMP_FILE"))
	var o, r float64
	if n, _ := fmt.Sscanf(strings.TrimSpace(string(b)), "%g x%g", &o, &r); n != 2 {
		return now.UnixNano()
	}
	el := float64(now.Sub(start)) * r
	return start.UnixNano() + int64(o*1e9) + int64(el)
}
