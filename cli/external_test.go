package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// userServer is a redis-server this test starts and then treats as a user's:
// notifications set to the user's own value and 1,000 unrelated keys of
// several types, some with a TTL, plus keys named like what the harness
// creates (or created before prefixes).
type userServer struct {
	addr   string
	admin  *redis.Client
	notify string
	keys   map[string]keyState
}

type keyState struct {
	dump string
	ttl  bool
}

// decoys are user keys named like the harness's keys without a prefix: the
// old default lock keys, a fence counter, rueidislock's key, and another
// run's prefixed key.
var decoys = []string{"k0", "k1", "k2", "k3", "{k0}:fence", "rueidislock:0:k0", "lockchaos:rtt", "lc:other:{k0}"}

func startUserServer(t *testing.T) *userServer {
	t.Helper()
	ctx := context.Background()
	srv, err := cluster.Start(ctx, cluster.Spec{Backend: cluster.Process, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	u := &userServer{addr: srv.Nodes[0].ServerAddr, admin: srv.AdminClient(srv.Nodes[0]), keys: map[string]keyState{}}
	// The process backend starts servers with KEA; a user's server usually
	// has notifications off, or only what its own code needs.
	if err := u.admin.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err(); err != nil {
		t.Fatal(err)
	}
	u.notify = u.config(t)
	p := u.admin.Pipeline()
	for i := 0; i < 1000; i++ {
		k := fmt.Sprintf("user:%d", i)
		switch i % 4 {
		case 0:
			p.Set(ctx, k, fmt.Sprintf("value %d", i), 0)
		case 1:
			p.Set(ctx, k, fmt.Sprintf("value %d", i), time.Hour)
		case 2:
			p.HSet(ctx, k, "a", i, "b", "x")
		case 3:
			p.HSet(ctx, k, "a", i)
			p.Expire(ctx, k, time.Hour)
		}
	}
	for _, k := range decoys {
		p.Set(ctx, k, "the user's "+k, 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	u.keys = u.snapshot(t)
	if len(u.keys) != 1000+len(decoys) {
		t.Fatalf("pre-loaded %d keys", len(u.keys))
	}
	return u
}

func (u *userServer) config(t *testing.T) string {
	t.Helper()
	v, err := u.admin.ConfigGet(context.Background(), "notify-keyspace-events").Result()
	if err != nil {
		t.Fatal(err)
	}
	return v["notify-keyspace-events"]
}

// snapshot is every key on the server (SCAN) with its DUMP and whether it
// has a TTL.
func (u *userServer) snapshot(t *testing.T) map[string]keyState {
	t.Helper()
	ctx := context.Background()
	out := map[string]keyState{}
	iter := u.admin.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		d, err := u.admin.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		ttl, err := u.admin.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = keyState{dump: d, ttl: ttl > 0}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// untouched fails the test unless the server holds exactly the user's keys,
// byte for byte with their TTLs, and its notification setting.
func (u *userServer) untouched(t *testing.T, after string) {
	t.Helper()
	now := u.snapshot(t)
	for k, want := range u.keys {
		got, ok := now[k]
		switch {
		case !ok:
			t.Errorf("after %s: the user's key %q is gone", after, k)
		case got.dump != want.dump:
			t.Errorf("after %s: the user's key %q changed", after, k)
		case got.ttl != want.ttl:
			t.Errorf("after %s: the user's key %q: TTL present %v, was %v", after, k, got.ttl, want.ttl)
		}
	}
	for k := range now {
		if _, ok := u.keys[k]; !ok {
			t.Errorf("after %s: key %q left over", after, k)
		}
	}
	if got := u.config(t); got != u.notify {
		t.Errorf("after %s: notify-keyspace-events = %q, was %q", after, got, u.notify)
	}
}

// A run on a user's server touches only its own prefix: every pre-loaded key
// is still there byte for byte (with its TTL), nothing of the run's is left,
// notify-keyspace-events is set back, and with notifications turned on for
// the run the unlock check runs (it is what del-no-owner fails).
func TestExternalUserServerUntouched(t *testing.T) {
	testenv.Long(t)
	runSlot(t)
	u := startUserServer(t)

	dir := filepath.Join(t.TempDir(), "smoke")
	code, stdout, stderr := lockchaos(t, "run", "smoke", "--lock", "simple", "--backend", "external", "--addrs", u.addr,
		"--duration", "1s", "--out", dir, "-q")
	wantExit(t, code, 0, stdout, stderr)
	r := readResults(t, dir)
	if r.Verdict != "valid" {
		t.Errorf("smoke verdict %q, want valid; violations %+v", r.Verdict, r.Violations)
	}
	if r.Notifications != cluster.NotifyEnabled || !hasNote(r.Notes, "turned on for the run") {
		t.Errorf("notifications %q, notes %q", r.Notifications, r.Notes)
	}
	if _, ok := r.Checks["unlock"]; !ok {
		t.Errorf("no unlock check on external with notifications enabled: %v", r.Checks)
	}
	if !strings.HasPrefix(r.KeyPrefix, "lc:") || r.RunID == "" || !strings.Contains(r.KeyPrefix, r.RunID) {
		t.Errorf("key prefix %q, run id %q", r.KeyPrefix, r.RunID)
	}
	u.untouched(t, "run smoke")

	dir = filepath.Join(t.TempDir(), "del")
	code, stdout, stderr = lockchaos(t, "run", "expire-then-unlock", "--lock", "del-no-owner", "--backend", "external",
		"--addrs", u.addr, "--out", dir, "-q")
	wantExit(t, code, 1, stdout, stderr)
	r = readResults(t, dir)
	if c := r.Checks["unlock"]; c.Verdict != "invalid" {
		t.Errorf("del-no-owner: unlock check %+v, want invalid (its DEL of another client's key observed)", c)
	}
	u.untouched(t, "run expire-then-unlock --lock del-no-owner")

	// Keys a lock derives (fenced's counter) and hashes (reentrant).
	for _, args := range [][]string{{"smoke", "--lock", "fenced", "--duration", "1s"}, {"reentrant-expiry", "--lock", "reentrant"}} {
		dir = filepath.Join(t.TempDir(), args[0])
		code, stdout, stderr = lockchaos(t, append([]string{"run", "--backend", "external", "--addrs", u.addr, "--out", dir, "-q", "--expect"}, args...)...)
		wantExit(t, code, 0, stdout, stderr)
		u.untouched(t, "run "+strings.Join(args, " "))
	}

	// bench used to FLUSHALL between locks and to write lockchaos:rtt.
	dir = filepath.Join(t.TempDir(), "bench")
	code, stdout, stderr = lockchaos(t, "bench", "--lock", "simple,fenced", "--backend", "external", "--addrs", u.addr,
		"--clients", "2", "--keys", "2", "--duration", "1s", "--out", dir)
	wantExit(t, code, 0, stdout, stderr)
	u.untouched(t, "bench")
}

// A run whose prefixed keys exist already is refused before it starts,
// naming them, and leaves them alone.
func TestExternalPreflightRefuses(t *testing.T) {
	runSlot(t)
	u := startUserServer(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := lockchaos(t, "run", "smoke", "--lock", "del-no-owner", "--backend", "external", "--addrs", u.addr,
		"--duration", "1s", "--out", dir, "-q", "--key-prefix", "lc:other:")
	wantExit(t, code, 3, stdout, stderr)
	if !strings.Contains(stderr, "lc:other:{k0}") || !strings.Contains(stderr, "--key-prefix") {
		t.Errorf("stderr does not name the key found:\n%s", stderr)
	}
	u.untouched(t, "a refused run")
}
