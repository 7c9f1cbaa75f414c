package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// No orphans: every container the docker backend starts carries labels
// naming the harness process that owns it (its pid, that process's start
// time, the host). A harness killed with SIGKILL cannot stop its
// containers; the next command that starts containers, and `lockchaos
// clean`, remove those whose harness is gone. Containers of a harness that
// still runs (another run in parallel) are left alone.

// Container labels.
const (
	LabelPID     = "lockchaos.pid"      // the owning harness's pid
	LabelStarted = "lockchaos.pidstart" // its start time (/proc/PID/stat field 22), against pid reuse
	LabelHost    = "lockchaos.host"     // the host it ran on
	LabelNode    = "lockchaos.node"     // the node's name in its cluster
)

// ownerLabels are the labels that tie a container to this process.
func ownerLabels() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{LabelPID: strconv.Itoa(os.Getpid()), LabelStarted: procStart(os.Getpid()), LabelHost: host}
}

// procStart is a process's start time in clock ticks since boot ("" when
// unknown): with the pid it names one process, even after pid reuse.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22: starttime
}

// harnessGone reports whether the process a container's labels name is no
// longer running on this host (false when the container belongs to another
// host: its harness cannot be checked from here).
func harnessGone(labels map[string]string) bool {
	host, _ := os.Hostname()
	if labels[LabelHost] != host {
		return false
	}
	pid, err := strconv.Atoi(labels[LabelPID])
	if err != nil || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	st := procStart(pid)
	if st == "" {
		return false // alive, not readable: leave it
	}
	if st != labels[LabelStarted] {
		return true // the pid was reused by another process
	}
	// A zombie (killed, not yet reaped) is gone too.
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 && s[i+2] == 'Z' {
		return true
	}
	return false
}

// ReapOrphans removes the containers of lockchaos harnesses that are gone
// (killed before they could stop them) and returns their names. It never
// touches a container without lockchaos's labels, or one whose harness
// still runs or ran on another host.
func ReapOrphans(ctx context.Context) ([]string, error) {
	dockerEnv()
	prov, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(discardLogger{}))
	if err != nil {
		return nil, fmt.Errorf("docker: %v", err)
	}
	defer prov.Close()
	return reapWith(ctx, prov.Client())
}

// containerAPI is the part of the docker client reaping uses (a stub in
// tests).
type containerAPI interface {
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
}

func reapWith(ctx context.Context, api containerAPI) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", LabelPID)})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %v", err)
	}
	var removed []string
	var errs []string
	for _, c := range list.Items {
		if !harnessGone(c.Labels) {
			continue
		}
		name := c.ID[:min(12, len(c.ID))]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		if _, err := api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, name+": "+err.Error())
			continue
		}
		removed = append(removed, fmt.Sprintf("%s (node %s of harness pid %s)", name, c.Labels[LabelNode], c.Labels[LabelPID]))
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("docker: remove orphaned containers: %s", strings.Join(errs, "; "))
	}
	return removed, nil
}
