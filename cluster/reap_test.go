package cluster

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

type stubDocker struct {
	items   []container.Summary
	removed []string
}

func (s *stubDocker) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{Items: s.items}, nil
}

func (s *stubDocker) ContainerRemove(_ context.Context, id string, _ client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	s.removed = append(s.removed, id)
	return client.ContainerRemoveResult{}, nil
}

// Reaping removes a container only when its labels name a harness on this
// host that is gone: a dead pid, or a live pid that is another process now.
// A live harness's containers, another host's, and containers whose labels
// cannot be checked stay.
func TestReapOnlyOrphans(t *testing.T) {
	host, _ := os.Hostname()
	me := ownerLabels()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := strconv.Itoa(dead.Process.Pid)
	lab := func(pid, start, h string) map[string]string {
		return map[string]string{LabelPID: pid, LabelStarted: start, LabelHost: h, LabelNode: "n1"}
	}
	s := &stubDocker{items: []container.Summary{
		{ID: "mine", Labels: me},
		{ID: "dead", Labels: lab(deadPID, "1", host)},
		{ID: "reused", Labels: lab(strconv.Itoa(os.Getpid()), "12345", host)},
		{ID: "elsewhere", Labels: lab(deadPID, "1", host+"-other")},
		{ID: "nopid", Labels: lab("x", "", host)},
	}}
	if _, err := reapWith(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	slices.Sort(s.removed)
	if !slices.Equal(s.removed, []string{"dead", "reused"}) {
		t.Errorf("removed %v, want [dead reused]", s.removed)
	}
}

func TestParseServerVersion(t *testing.T) {
	for in, want := range map[string]string{
		"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n":                     "redis 7.0.15",
		"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n": "valkey 8.0.1",
		"# Server\r\nredis_mode:standalone\r\n":                                             "",
	} {
		if got := parseServerVersion(in); got != want {
			t.Errorf("parseServerVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// keySlot agrees with Redis (CLUSTER KEYSLOT values).
func TestKeySlot(t *testing.T) {
	for k, want := range map[string]int{"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443, "foo{}{bar}": 8363, "": 0} {
		if got := KeySlot(k); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", k, got, want)
		}
	}
}
