package runner_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// userRedis starts a redis-server (process backend) to be used as a user's
// server, with notify-keyspace-events set to notify.
func userRedis(t *testing.T, notify string) (addr string, admin *redis.Client) {
	t.Helper()
	srv, err := cluster.Start(context.Background(), cluster.Spec{Backend: cluster.Process, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	admin = srv.AdminClient(srv.Nodes[0])
	if err := admin.ConfigSet(context.Background(), "notify-keyspace-events", notify).Err(); err != nil {
		t.Fatal(err)
	}
	return srv.Nodes[0].ServerAddr, admin
}

func notifyConfig(t *testing.T, admin *redis.Client) string {
	t.Helper()
	v, err := admin.ConfigGet(context.Background(), "notify-keyspace-events").Result()
	if err != nil {
		t.Fatal(err)
	}
	return v["notify-keyspace-events"]
}

// An interrupted run (Ctrl-C is a cancelled context) sets the user's
// notify-keyspace-events back and removes its keys.
func TestExternalInterruptRestoresConfig(t *testing.T) {
	addr, admin := userRedis(t, "")
	s, err := scenarios.Load("smoke")
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		out *runner.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := runner.Run(ctx, runner.Options{Scenario: s, Lock: "fenced", Setup: runner.Setup{Backend: cluster.External, Addrs: []string{addr}, KeyPrefix: "test:run:"},
			Out: filepath.Join(t.TempDir(), "run")})
		done <- result{out, err}
	}()
	// Interrupt once the run has turned notifications on and made keys.
	deadline := time.Now().Add(20 * time.Second)
	for notifyConfig(t, admin) == "" || admin.Exists(context.Background(), "test:run:{k0}:fence").Val() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run never turned notifications on or made its fence key")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || r.out == nil || !r.out.Interrupted {
		t.Fatalf("interrupted run: %+v, %v", r.out, r.err)
	}
	if got := notifyConfig(t, admin); got != "" {
		t.Errorf("notify-keyspace-events = %q after an interrupted run, want it back to \"\"", got)
	}
	if n := admin.DBSize(context.Background()).Val(); n != 0 {
		keys, _, _ := admin.Scan(context.Background(), 0, "*", 100).Result()
		t.Errorf("%d keys left after the interrupted run: %q", n, keys)
	}
}

// Where CONFIG is refused (here by ACL), the run goes on without
// notifications and says so; the unlock check reads the command record
// (MONITOR is allowed). Where MONITOR is refused too, it is skipped.
func TestExternalConfigRefused(t *testing.T) {
	addr, admin := userRedis(t, "")
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "default", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load("smoke")
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = time.Second
	run := func() *metrics.Results {
		t.Helper()
		out, err := runner.Run(context.Background(), runner.Options{Scenario: s, Lock: "simple", Setup: runner.Setup{Backend: cluster.External,
			Addrs: []string{addr}}, Out: filepath.Join(t.TempDir(), "run")})
		if err != nil {
			t.Fatal(err)
		}
		return out.Results
	}
	r := run()
	if r.Verdict != "valid" || r.Notifications != cluster.NotifyRefused {
		t.Errorf("verdict %q, notifications %q", r.Verdict, r.Notifications)
	}
	if _, ok := r.Checks["unlock"]; !ok || r.CommandRecord != cluster.RecordMonitor || r.OwnershipSource != "command-record" {
		t.Errorf("CONFIG refused, MONITOR allowed: unlock check ran %v, command record %q, source %q; want it run from the record", ok, r.CommandRecord, r.OwnershipSource)
	}
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "default", "-monitor").Err(); err != nil {
		t.Fatal(err)
	}
	r2 := run()
	if _, ok := r2.Checks["unlock"]; ok || r2.CommandRecord != cluster.RecordUnavailable {
		t.Errorf("CONFIG and MONITOR refused: unlock check ran %v, command record %q; want it skipped, the record unavailable", ok, r2.CommandRecord)
	}
	monitorNote := false
	for _, n := range r2.Notes {
		monitorNote = monitorNote || strings.Contains(n, "MONITOR refused")
	}
	if !monitorNote {
		t.Errorf("no note says MONITOR was refused: %q", r2.Notes)
	}
	found := false
	for _, n := range r.Notes {
		found = found || strings.Contains(n, "CONFIG GET notify-keyspace-events")
	}
	if !found {
		t.Errorf("no note says CONFIG was refused: %q", r.Notes)
	}
}
