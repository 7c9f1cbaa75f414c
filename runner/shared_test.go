package runner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/lockimpl/driver"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Clients sharing driver processes (lock option tasks) are refused, before
// anything starts, a fault on a client's process or its links, a lock in
// lockchaos's process, and a driver without the tasks extension; a fault
// on a server or on one call (cancel, throw) stays.
func TestSharedProcessFaults(t *testing.T) {
	kit, err := driver.Resolve(filepath.Join("..", "drivers", "node", "controls", "shared-lease.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	redispy, err := driver.Resolve(filepath.Join("..", "drivers", "python", "redis-py.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lock, scenario, tasks, want string
	}{
		{kit, "gc-pause", "4", "pause-client (scenario gc-pause, faults[0]) acts on a client's process"},
		{kit, "holder-partitioned", "4", "acts on a client's process or its links"},
		{kit, "failover", "4", ""},
		{kit, "thrown-in-critical-section", "4", ""},
		{kit, "cancelled-request", "4", ""},
		{kit, "gc-pause", "1", ""},
		{redispy, "smoke", "4", "runs one client a process"},
		{"simple", "smoke", "4", "simple runs in lockchaos's process"},
		{kit, "smoke", "many", "tasks=many"},
	} {
		s, err := scenarios.Load(c.scenario)
		if err != nil {
			t.Fatal(err)
		}
		s.Lock.Extra = map[string]string{driver.TasksOption: c.tasks}
		err = sharedProcessFaults(c.lock, s)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s, %s, tasks %s: %v, want accepted", c.lock, c.scenario, c.tasks, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s, %s, tasks %s: %v, want refused with %q", c.lock, c.scenario, c.tasks, err, c.want)
		}
	}
}
