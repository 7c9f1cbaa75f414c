package driver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// With tasks=2, clients 0-1 share one driver process and clients 2-3
// another: each client sends its own init and names itself in each
// request, a pushed event reaches the client whose lease it names, a fault
// on a shared process is refused, and the process ends with its last
// client.
func TestClientsShareAProcess(t *testing.T) {
	var mu sync.Mutex
	notes := map[int][]lockimpl.Note{}
	lks := make([]*Locker, 4)
	for c := range lks {
		env := testEnv(func(n lockimpl.Note) { mu.Lock(); notes[c] = append(notes[c], n); mu.Unlock() })
		env.ClientID, env.ConnName = c, "lc-test-c"+string(rune('0'+c))
		env.Options.Extra = map[string]string{TasksOption: "2"}
		lk, err := New(fakeSpec("tasks"), env)
		if err != nil {
			t.Fatal(err)
		}
		lks[c] = lk.(*Locker)
		defer lks[c].Close()
	}
	ctx := context.Background()
	pids := map[int]bool{}
	for c, l := range lks {
		pids[l.Pid()] = true
		_, err := l.Acquire(ctx, "whoami")
		var who, inits, pid int
		if err == nil || !lockimpl.IsIndeterminate(err) {
			t.Fatalf("client %d: whoami: %v", c, err)
		}
		msg := err.Error()[strings.Index(err.Error(), "client "):]
		if _, serr := fmtSscanf(msg, &who, &inits, &pid); serr != nil {
			t.Fatalf("client %d: %q: %v", c, msg, serr)
		}
		if who != c || inits != 2 || pid != l.Pid() {
			t.Errorf("client %d: the driver saw client %d, %d inits, pid %d (its process %d): want itself, 2 inits, its process", c, who, inits, pid, l.Pid())
		}
		if lks[c/2*2].Pid() != l.Pid() {
			t.Errorf("client %d runs in pid %d, client %d in %d: want one process a pair", c, l.Pid(), c/2*2, lks[c/2*2].Pid())
		}
	}
	if len(pids) != 2 {
		t.Fatalf("%d processes for 4 clients at tasks=2, want 2", len(pids))
	}
	// Client 1's lease gets the renewal and the loss the driver pushes,
	// client 0, in the same process, nothing.
	ls, err := lks[1].Acquire(ctx, "lose")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("client 1's lease not lost 5 s after the driver pushed its loss")
	}
	mu.Lock()
	n0, n1 := len(notes[0]), len(notes[1])
	mu.Unlock()
	if n0 != 0 || n1 != 2 {
		t.Errorf("notes: client 0 %d, client 1 %d; want 0 and 2 (the renewal and the loss of client 1's lease)", n0, n1)
	}
	if _, err := lks[0].Freeze(); err == nil || !strings.Contains(err.Error(), "shared with clients [0 1]") {
		t.Errorf("Freeze of a shared process: %v, want refused naming clients [0 1]", err)
	}
	if err := lks[2].Kill(); err == nil {
		t.Error("Kill of a shared process: nil, want refused")
	}
	if lks[0].Config()["tasks_per_process"] != 2 {
		t.Errorf("config %v: want tasks_per_process 2", lks[0].Config())
	}
	// The process ends with its last client.
	pid := lks[0].Pid()
	if err := lks[0].Close(); err != nil {
		t.Fatal(err)
	}
	if gone(pid) {
		t.Fatal("the process ended with its first client; client 1 still uses it")
	}
	if _, err := lks[1].Acquire(ctx, "k1"); err != nil {
		t.Errorf("client 1 after client 0 closed: %v", err)
	}
	if err := lks[1].Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Errorf("pid %d still runs after its last client closed", pid)
	}
}

// A driver without the tasks extension refuses the option.
func TestTasksNeedTheExtension(t *testing.T) {
	env := testEnv(nil)
	env.Options.Extra = map[string]string{TasksOption: "4"}
	if _, err := New(fakeSpec("good"), env); err == nil || !strings.Contains(err.Error(), "tasks extension") {
		t.Errorf("New: %v, want refused for want of the tasks extension", err)
	}
	for _, bad := range []string{"0", "x", "65"} {
		env.Options.Extra = map[string]string{TasksOption: bad}
		if _, err := New(fakeSpec("tasks"), env); err == nil || !strings.Contains(err.Error(), "tasks="+bad) {
			t.Errorf("tasks=%s: %v, want an error naming it", bad, err)
		}
	}
	if got := procConnName("lc-r1a2-c5", 2); got != "lc-r1a2-p2" {
		t.Errorf("procConnName = %q, want lc-r1a2-p2", got)
	}
}

func fmtSscanf(s string, who, inits, pid *int) (int, error) {
	return fmt.Sscanf(s, "client %d inits %d pid %d", who, inits, pid)
}
