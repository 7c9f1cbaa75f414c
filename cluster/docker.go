package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

func init() { backends[Docker] = startDocker }

// dockerEnv makes testcontainers talk to the local engine only: the host is
// 127.0.0.1 (never a gateway address). Ryuk, testcontainers' reaper, is on
// only where it can work: its image is already here (it is never pulled)
// and the engine has a bridge network to publish its port on; else it is
// off and containers are removed by Stop, and by the label reaper
// (ReapOrphans) after a harness killed with SIGKILL. Variables the user set
// are kept. testcontainers' own chatter (its global logger) is silenced;
// each cluster logs it to its run directory instead.
func dockerEnv() {
	dockerEnvOnce.Do(func() {
		tclog.SetDefault(tclog.NewNoopLogger())
		if _, ok := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !ok {
			_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
		}
		if _, ok := os.LookupEnv(ryukDisabledEnv); ok {
			ryukWhy = ryukDisabledEnv + " is set by the caller"
			return
		}
		var on bool
		if cli, err := client.New(client.FromEnv); err != nil {
			ryukWhy = "no docker client: " + err.Error()
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			on, ryukWhy = ryukUsable(ctx, cli)
			cancel()
			_ = cli.Close()
		}
		if !on {
			_ = os.Setenv(ryukDisabledEnv, "true")
		}
	})
}

const ryukDisabledEnv = "TESTCONTAINERS_RYUK_DISABLED"

var (
	dockerEnvOnce sync.Once
	ryukWhy       string
)

// ryukAPI is what deciding on Ryuk needs of the docker client (a stub in
// tests).
type ryukAPI interface {
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	NetworkInspect(ctx context.Context, network string, opts client.NetworkInspectOptions) (client.NetworkInspectResult, error)
}

// ryukImage is the reaper image this testcontainers-go (v0.44.0) runs: its
// internal config.ReaperDefaultImage.
const ryukImage = "testcontainers/ryuk:0.14.0"

// ryukUsable says whether Ryuk can run here, and why (not).
func ryukUsable(ctx context.Context, api ryukAPI) (bool, string) {
	if _, err := api.ImageInspect(ctx, ryukImage); err != nil {
		return false, "Ryuk off: its image " + ryukImage + " is not here (it is never pulled); the label reaper removes orphans"
	}
	if _, err := api.NetworkInspect(ctx, "bridge", client.NetworkInspectOptions{}); err != nil {
		return false, "Ryuk off: the engine has no bridge network to publish its port on (dockerd --bridge=none); the label reaper removes orphans"
	}
	return true, "Ryuk on: " + ryukImage + " is here and the engine has a bridge network"
}

// DockerAvailable says whether a docker engine answers (testcontainers'
// provider health check) and, when image is given, whether it is present
// locally (nothing is pulled); the error says what is missing.
func DockerAvailable(ctx context.Context, image string) error {
	dockerEnv()
	prov, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(discardLogger{}))
	if err != nil {
		return fmt.Errorf("docker: %v", err)
	}
	defer prov.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := prov.Client().Info(ctx, client.InfoOptions{}); err != nil {
		return fmt.Errorf("docker engine not reachable: %v", err)
	}
	if image == "" {
		return nil
	}
	if _, err := prov.Client().ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("docker image %s not found (build %s with scripts/docker-image.sh): %v", image, LocalImage, err)
	}
	return nil
}

// discardLogger silences testcontainers.
type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// dockerCluster is what the nodes of one cluster share: a docker client and
// the image.
type dockerCluster struct {
	prov   *testcontainers.DockerProvider
	image  string
	dir    string
	aof    bool
	logger tclog.Logger
}

// dockerNode is one redis-server container on the host network, listening on
// 127.0.0.1:port.
type dockerNode struct {
	dc   *dockerCluster
	name string
	port int
	// extra and portArgs are more redis-server args (the cluster
	// topology's); confDir, when set, is a host directory mounted at
	// /lockchaos-conf, which outlives an empty restart (the cluster config
	// file).
	extra    []string
	portArgs func(port int) []string
	confDir  string
	// sentinel: the container runs a sentinel with confDir's
	// sentinel.conf, not a data node.
	sentinel bool

	mu  sync.Mutex
	ctr *testcontainers.DockerContainer
}

func startDocker(ctx context.Context, c *Cluster) error {
	dockerEnv()
	n := 1
	switch c.Spec.Topology {
	case Single:
	case Independent:
		n = c.Spec.Nodes
	case RedisCluster, Sentinel:
		n = 0
	default:
		return fmt.Errorf("%w: backend docker supports topologies single, sentinel, independent and cluster, not %s", ErrBadSpec, c.Spec.Topology)
	}
	if err := DockerAvailable(ctx, ""); err != nil {
		return fmt.Errorf("%w: backend docker: %v", ErrInfra, err)
	}
	// What an earlier harness killed with SIGKILL left running goes first.
	reaped, reapErr := ReapOrphans(ctx)
	logger := tclog.Logger(discardLogger{})
	if c.Spec.Dir != "" {
		if err := os.MkdirAll(filepath.Join(c.Spec.Dir, "nodes"), 0o755); err != nil {
			return fmt.Errorf("%w: node dir: %v", ErrInfra, err)
		}
		if f, err := os.Create(filepath.Join(c.Spec.Dir, "nodes", "testcontainers.log")); err == nil {
			c.onStop(f.Close)
			logger = &fileLogger{w: f}
		}
	}
	logger.Printf("%s", ryukWhy)
	for _, r := range reaped {
		logger.Printf("removed an orphaned container: %s", r)
	}
	if reapErr != nil {
		logger.Printf("%v", reapErr)
	}
	prov, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(logger))
	if err != nil {
		return fmt.Errorf("%w: backend docker: %v", ErrInfra, err)
	}
	c.onStop(prov.Close)
	image, why, err := resolveImage(ctx, prov.Client(), c.Spec.Image)
	if err != nil {
		return fmt.Errorf("%w: backend docker: %v", ErrInfra, err)
	}
	c.image, c.ImageWhy = image, why
	dc := &dockerCluster{prov: prov, image: image, dir: c.Spec.Dir, aof: c.Spec.AOF, logger: logger}
	switch c.Spec.Topology {
	case RedisCluster:
		return startRedisCluster(ctx, c, dc.clusterStarter(c))
	case Sentinel:
		return startSentinelTopology(ctx, c, dc.clusterStarter(c), dc.sentinelStarter(c))
	}
	for i := 1; i <= n; i++ {
		dn := &dockerNode{dc: dc, name: fmt.Sprintf("n%d", i)}
		if err := dn.startFresh(ctx); err != nil {
			return fmt.Errorf("%w: start redis container %s: %v", ErrInfra, dn.name, err)
		}
		c.onStop(dn.stop)
		addr := dn.addr()
		c.Nodes = append(c.Nodes, &Node{Name: dn.name, Addr: addr, ServerAddr: addr, Role: "master", Ctl: dn})
	}
	return nil
}

type fileLogger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *fileLogger) Printf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", v...)
}

func (d *dockerNode) addr() string { return "127.0.0.1:" + strconv.Itoa(d.port) }

// startFresh picks a free port and runs a container on it; a lost race for
// the port (the server exits at once) is retried.
func (d *dockerNode) startFresh(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		max := 65535
		if d.portArgs != nil {
			max = maxClusterPort // its bus listens 10000 above
		}
		if d.port, err = freePortBelow(max); err != nil {
			return err
		}
		if err = d.run(ctx); err == nil {
			return nil
		}
	}
	return err
}

// run starts a new container for this node on d.port and waits until it
// accepts connections.
func (d *dockerNode) run(ctx context.Context) error {
	cmd := []string{"redis-server", "--port", strconv.Itoa(d.port), "--bind", "127.0.0.1",
		"--protected-mode", "yes", "--daemonize", "no", "--save", "", "--notify-keyspace-events", "KEA"}
	if d.dc.aof {
		cmd = append(cmd, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		cmd = append(cmd, "--appendonly", "no")
	}
	cmd = append(cmd, d.extra...)
	if d.portArgs != nil {
		cmd = append(cmd, d.portArgs(d.port)...)
	}
	// A data node says it is ready; a sentinel (before Redis 7.2) says
	// nothing of the kind, but it logs the master it monitors.
	ready := "Ready to accept connections"
	if d.sentinel {
		cmd = []string{"redis-server", containerConfDir + "/sentinel.conf", "--sentinel",
			"--port", strconv.Itoa(d.port), "--bind", "127.0.0.1", "--daemonize", "no"}
		ready = "+monitor master"
	}
	ctr, err := testcontainers.Run(ctx, d.dc.image,
		testcontainers.WithLogger(d.dc.logger),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithLabels(ownerLabels()),
		testcontainers.WithLabels(map[string]string{LabelNode: d.name}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
			if d.confDir != "" {
				hc.Binds = append(hc.Binds, d.confDir+":"+containerConfDir)
			}
		}),
		// Host networking only: no other network may be attached.
		testcontainers.WithEndpointSettingsModifier(func(m map[string]*network.EndpointSettings) {
			for k := range m {
				delete(m, k)
			}
		}),
		testcontainers.WithWaitStrategy(wait.ForLog(ready).WithStartupTimeout(30*time.Second)),
	)
	if err != nil {
		if ctr != nil {
			d.saveLogs(ctr)
			_ = ctr.Terminate(context.WithoutCancel(ctx))
		}
		return err
	}
	d.mu.Lock()
	d.ctr = ctr
	d.mu.Unlock()
	return waitReady(ctx, d.addr(), 10*time.Second, nil, 0)
}

func (d *dockerNode) container() (*testcontainers.DockerContainer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctr == nil {
		return nil, errors.New("no container")
	}
	return d.ctr, nil
}

// api runs f against this node's container with a bounded context.
func (d *dockerNode) api(f func(ctx context.Context, cli client.APIClient, id string) error) error {
	ctr, err := d.container()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f(ctx, d.dc.prov.Client(), ctr.GetContainerID())
}

// Pause freezes every process of the container (docker pause: the cgroup
// freezer); the server accepts TCP connections in the kernel but answers
// nothing.
func (d *dockerNode) Pause() error {
	return d.api(func(ctx context.Context, cli client.APIClient, id string) error {
		_, err := cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
		return err
	})
}

func (d *dockerNode) Resume() error {
	return d.api(func(ctx context.Context, cli client.APIClient, id string) error {
		_, err := cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
		return err
	})
}

// Kill sends SIGKILL to the container (a paused one is killed too) and
// waits until the engine sees it gone.
func (d *dockerNode) Kill() error {
	return d.api(func(ctx context.Context, cli client.APIClient, id string) error {
		if _, err := cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			return err
		}
		for ctx.Err() == nil {
			if d.State() == "gone" {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return fmt.Errorf("container %s still running after SIGKILL", d.name)
	})
}

// Restart brings a killed node back on the same port: empty starts a fresh
// container (no data at all); otherwise the same container starts again and
// keeps its filesystem (its AOF, when AOF is on).
func (d *dockerNode) Restart(ctx context.Context, empty bool) error {
	ctr, err := d.container()
	if err != nil {
		return err
	}
	if st := d.State(); st != "gone" {
		return fmt.Errorf("restart: node is still %s (kill it first)", st)
	}
	if empty {
		d.saveLogs(ctr)
		if err := ctr.Terminate(ctx); err != nil {
			return fmt.Errorf("restart: remove old container: %w", err)
		}
		d.mu.Lock()
		d.ctr = nil
		d.mu.Unlock()
		return d.run(ctx)
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return waitReady(ctx, d.addr(), 10*time.Second, nil, 0)
}

func (d *dockerNode) inspect() (*container.State, error) {
	var st *container.State
	err := d.api(func(ctx context.Context, cli client.APIClient, id string) error {
		res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err == nil && res.Container.State == nil {
			err = errors.New("no state")
		}
		if err == nil {
			st = res.Container.State
		}
		return err
	})
	return st, err
}

// State is the container's state: "running", "paused", "restarting", or
// "gone" once it exited, died or was removed.
func (d *dockerNode) State() string {
	st, err := d.inspect()
	if err != nil {
		return "gone"
	}
	switch s := string(st.Status); s {
	case "exited", "dead", "removing", "created":
		return "gone"
	default:
		return s
	}
}

// Pid is the host pid of the container's redis-server (0 when not running).
func (d *dockerNode) Pid() int {
	st, err := d.inspect()
	if err != nil {
		return 0
	}
	return st.Pid
}

// saveLogs copies the container's log to <dir>/nodes/<name>.log (appending,
// so a restarted node keeps its history).
func (d *dockerNode) saveLogs(ctr *testcontainers.DockerContainer) {
	if d.dc.dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return
	}
	defer rc.Close()
	f, err := os.OpenFile(filepath.Join(d.dc.dir, "nodes", d.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, rc)
}

// stop removes the container (unpausing is not needed: removal with force
// kills a paused container).
func (d *dockerNode) stop() error {
	d.mu.Lock()
	ctr := d.ctr
	d.ctr = nil
	d.mu.Unlock()
	if ctr == nil {
		return nil
	}
	d.saveLogs(ctr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	timeout := time.Duration(0)
	err := ctr.Terminate(ctx, testcontainers.StopTimeout(timeout))
	if err != nil && strings.Contains(err.Error(), "No such container") {
		return nil
	}
	return err
}

// containerConfDir is where a node's config directory is mounted.
const containerConfDir = "/lockchaos-conf"

// maxClusterPort is the highest port a cluster node can have: its bus
// listens 10000 above.
const maxClusterPort = 65535 - 10000

// freePortBelow is a free port no higher than max.
func freePortBelow(max int) (int, error) {
	for range 100 {
		p, err := freePort()
		if err != nil || p <= max {
			return p, err
		}
	}
	return 0, fmt.Errorf("find a free port: none at or below %d in 100 tries", max)
}

// confDir makes <run>/nodes/<name>-conf, a host directory mounted into the
// node's container that outlives the container (mode 0777: the server in
// the container may run as another user, as the official image's redis).
func (dc *dockerCluster) confDir(c *Cluster, name string) (string, error) {
	base := dc.dir
	if base == "" {
		tmp, err := os.MkdirTemp("", "lockchaos-conf-")
		if err != nil {
			return "", fmt.Errorf("%w: node config dir: %v", ErrInfra, err)
		}
		c.onStop(func() error { return os.RemoveAll(tmp) })
		base = tmp
	}
	conf := filepath.Join(base, "nodes", name+"-conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return "", fmt.Errorf("%w: node config dir: %v", ErrInfra, err)
	}
	if err := os.Chmod(conf, 0o777); err != nil {
		return "", fmt.Errorf("%w: node config dir: %v", ErrInfra, err)
	}
	return conf, nil
}

// clusterStarter starts data nodes (of the cluster or sentinel topology) as
// containers. Each keeps its config in a host directory mounted into the
// container, so that an empty restart (a new container) of a cluster node
// comes back as the same node.
func (dc *dockerCluster) clusterStarter(c *Cluster) nodeStarter {
	return func(ctx context.Context, name string, extra []string, portArgs func(int) []string) (*Node, error) {
		conf, err := dc.confDir(c, name)
		if err != nil {
			return nil, err
		}
		args := append([]string{}, extra...)
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--cluster-config-file" {
				args[i+1] = containerConfDir + "/" + args[i+1]
			}
		}
		dn := &dockerNode{dc: dc, name: name, extra: args, portArgs: portArgs, confDir: conf}
		if err := dn.startFresh(ctx); err != nil {
			return nil, fmt.Errorf("%w: start redis container %s: %v", ErrInfra, name, err)
		}
		c.onStop(dn.stop)
		addr := dn.addr()
		n := &Node{Name: name, Addr: addr, ServerAddr: addr, Ctl: dn}
		c.Nodes = append(c.Nodes, n)
		return n, nil
	}
}

// sentinelStarter starts sentinels as containers, each with its
// sentinel.conf in a mounted host directory (a sentinel rewrites its config
// file as it learns the topology).
func (dc *dockerCluster) sentinelStarter(c *Cluster) sentinelStarter {
	return func(ctx context.Context, name, text string) (*Node, error) {
		conf, err := dc.confDir(c, name)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(conf, "sentinel.conf"), []byte(text), 0o666); err != nil {
			return nil, fmt.Errorf("%w: sentinel config: %v", ErrInfra, err)
		}
		// WriteFile's mode is masked by the umask.
		if err := os.Chmod(filepath.Join(conf, "sentinel.conf"), 0o666); err != nil {
			return nil, fmt.Errorf("%w: sentinel config: %v", ErrInfra, err)
		}
		dn := &dockerNode{dc: dc, name: name, confDir: conf, sentinel: true}
		if err := dn.startFresh(ctx); err != nil {
			return nil, fmt.Errorf("%w: start sentinel container %s: %v", ErrInfra, name, err)
		}
		c.onStop(dn.stop)
		addr := dn.addr()
		return &Node{Name: name, Addr: addr, ServerAddr: addr, Role: "sentinel", Ctl: dn}, nil
	}
}
