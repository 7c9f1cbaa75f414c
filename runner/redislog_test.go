package runner

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis's own log lines (here a Sentinel client that finds no sentinel
// on a closed loopback port) go to the run directory of the run in
// progress, not to stderr; with two runs at once each log gets the line,
// marked; after the run nothing more is written to its log.
func TestRedisLogGoesToTheRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // a loopback port nothing listens on
	logLine := func() {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "lockchaos-test", SentinelAddrs: []string{closed},
			MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_ = c.Ping(ctx).Err()
	}
	read := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, RedisLogFile))
		return string(b)
	}
	one, two := t.TempDir(), t.TempDir()
	detach := redisLogs.attach(one)
	logLine()
	if got := read(one); !strings.Contains(got, "sentinel: GetMasterAddrByName") || strings.Contains(got, "runs in this process") {
		t.Errorf("the run's %s holds %q: want go-redis's sentinel line, unmarked", RedisLogFile, got)
	}
	detach2 := redisLogs.attach(two)
	logLine()
	if got := read(two); !strings.Contains(got, "[one of 2 runs in this process] sentinel:") {
		t.Errorf("with two runs at once, the second's log holds %q: want the line marked", got)
	}
	detach()
	detach2()
	before := read(one)
	logLine()
	if after := read(one); after != before {
		t.Errorf("after its run, the log grew by %q", after[len(before):])
	}
}
