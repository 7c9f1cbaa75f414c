package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// startHarness starts `lockchaos run smoke` with lock on backend and waits until
// ready(pid) says its servers are up; it returns the harness's process.
// The harness is killed at the end of the test in any case.
func startHarness(t *testing.T, bin, backend, lock string, ready func(pid int) bool) *exec.Cmd {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	var stdout, stderr syncBuffer
	args := []string{"run", "smoke", "--lock", lock, "--backend", backend, "--duration", "60s", "--out", dir, "-q"}
	if backend == "docker" {
		args = append(args, "--image", cluster.TestImage()) // never the default: it may be pulled
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	deadline := time.Now().Add(60 * time.Second)
	for !ready(cmd.Process.Pid) {
		select {
		case <-exited:
			t.Fatalf("lockchaos exited before its servers were up\nstderr:\n%s", stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers not up after 60s\nstderr:\n%s", stderr.String())
		}
	}
	time.Sleep(500 * time.Millisecond) // into the workload
	return cmd
}

// gone reports whether pid no longer runs (absent, or a zombie).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// A harness killed with SIGKILL (no chance to clean up) leaves no
// redis-server behind on the process backend: each dies with it.
func TestSIGKILLLeavesNoServersProcess(t *testing.T) {
	t.Parallel()
	runSlot(t)
	bin := lockchaosBinary(t)
	var servers []int
	cmd := startHarness(t, bin, "process", "simple", func(pid int) bool {
		servers = servers[:0]
		for _, k := range descendants(pid) {
			if comm(k) == "redis-server" {
				servers = append(servers, k)
			}
		}
		return len(servers) > 0
	})
	killWantGone(t, cmd, "redis-server", servers)
}

// killWantGone kills the harness cmd with SIGKILL and fails the test for
// each of pids (its what) still running 10s later (killing it then).
func killWantGone(t *testing.T, cmd *exec.Cmd, what string, pids []int) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !gone(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !gone(pid) {
			t.Errorf("%s %d still runs 10s after its harness was killed", what, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// On the docker backend a killed harness's containers outlive it (nothing
// can stop them); the next `lockchaos clean` (as any command that starts
// containers) removes them, and only them.
func TestSIGKILLLeavesNoContainersDocker(t *testing.T) {
	if err := cluster.DockerAvailable(context.Background(), cluster.TestImage()); err != nil {
		testenv.Missing(t, "LOCKCHAOS_REQUIRE_DOCKER", "docker backend unavailable: %v", err)
	}
	t.Parallel()
	runSlot(t)
	bin := lockchaosBinary(t)
	containers := func(pid int) []string {
		out, err := exec.Command("docker", "ps", "-a", "-q", "--filter", "label="+cluster.LabelPID+"="+strconv.Itoa(pid)).Output()
		if err != nil {
			t.Fatalf("docker ps: %v", err)
		}
		return strings.Fields(string(out))
	}
	cmd := startHarness(t, bin, "docker", "simple", func(pid int) bool { return len(containers(pid)) > 0 })
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		for _, id := range containers(pid) {
			_ = exec.Command("docker", "rm", "-f", id).Run()
		}
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	time.Sleep(300 * time.Millisecond)
	if n := len(containers(pid)); n == 0 {
		t.Fatal("no container left after SIGKILL: the test shows nothing (did the run stop them?)")
	}
	code, stdout, stderr := lockchaos(t, "clean")
	wantExit(t, code, 0, stdout, stderr)
	if left := containers(pid); len(left) > 0 {
		t.Errorf("containers of the killed harness after clean: %v\nclean said:\n%s", left, stdout)
	}
	if !strings.Contains(stdout, "removed") {
		t.Errorf("clean did not say what it removed:\n%s", stdout)
	}
}
