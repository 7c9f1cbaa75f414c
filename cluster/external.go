package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Environment variables of the external backend. The password is read from
// the environment only, so it never lands in a scenario file, a flag, the
// history or a log; it is never printed.
const (
	EnvRedisPassword = "LOCKCHAOS_REDIS_PASSWORD"
	// EnvRedisCA names a PEM file of CA certificates trusted for TLS
	// (default: the system's roots).
	EnvRedisCA = "LOCKCHAOS_REDIS_CA"
)

func init() { backends[External] = startExternal }

// startExternal uses servers the user runs: Spec.Addrs, one for single, N
// for independent. Only client-side faults (and proxy faults, with
// Spec.Proxy) apply: the harness cannot pause or kill them.
func startExternal(ctx context.Context, c *Cluster) error {
	addrs := c.Spec.Addrs
	switch {
	case len(addrs) == 0:
		return fmt.Errorf("%w: backend external needs addrs (host:port or redis://host:port URLs)", ErrBadSpec)
	case c.Spec.Topology == Single && len(addrs) != 1:
		return fmt.Errorf("%w: backend external, topology single: give exactly one address, not %d", ErrBadSpec, len(addrs))
	case c.Spec.Topology == Independent:
		c.Spec.Nodes = len(addrs)
	case c.Spec.Topology != Single:
		return fmt.Errorf("%w: backend external supports topologies single and independent, not %s", ErrBadSpec, c.Spec.Topology)
	}
	c.password = os.Getenv(EnvRedisPassword)
	seen := map[string]bool{}
	for i, raw := range addrs {
		ea, err := parseExternal(ctx, raw, c.Spec.TLS, c.Spec.AllowRemote)
		if err != nil {
			return err
		}
		if seen[ea.addr] {
			return fmt.Errorf("%w: external address %s is listed twice (independent masters must be distinct servers)", ErrBadSpec, ea.display)
		}
		seen[ea.addr] = true
		n := &Node{Name: fmt.Sprintf("n%d", i+1), Addr: ea.addr, ServerAddr: ea.addr, Role: "master", Ctl: externalCtl{}, tls: ea.tls}
		if err := c.pingExternal(ctx, n); err != nil {
			return fmt.Errorf("%w: external node %s (%s): %v", ErrInfra, n.Name, ea.display, err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return nil
}

func (c *Cluster) pingExternal(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl := redis.NewClient(&redis.Options{Addr: n.ServerAddr, Password: c.password, TLSConfig: n.tls,
		MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		ContextTimeoutEnabled: true, PoolSize: 1, DisableIdentity: true})
	defer cl.Close()
	return cl.Ping(ctx).Err()
}

// externalAddr is one parsed external address.
type externalAddr struct {
	addr    string // host:port dialled (the resolved loopback IP unless AllowRemote)
	tls     *tls.Config
	display string // for messages: never holds credentials
}

// parseExternal parses host:port, redis://host:port or rediss://host:port
// (TLS; forceTLS makes every address TLS). Credentials in the address are
// refused (the password goes in LOCKCHAOS_REDIS_PASSWORD). Unless
// allowRemote, the host must resolve to loopback addresses only
// (127.0.0.0/8, ::1); the address is then pinned to the resolved IP so it
// cannot resolve elsewhere later.
func parseExternal(ctx context.Context, raw string, forceTLS, allowRemote bool) (externalAddr, error) {
	var host, port string
	useTLS := forceTLS
	display := raw
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return externalAddr{}, fmt.Errorf("%w: external address: not a URL (%v)", ErrBadSpec, redactErr(err, raw))
		}
		display = u.Scheme + "://" + u.Host
		switch u.Scheme {
		case "redis":
		case "rediss":
			useTLS = true
		default:
			return externalAddr{}, fmt.Errorf("%w: external address %s: scheme %q is not redis or rediss", ErrBadSpec, display, u.Scheme)
		}
		if u.User != nil {
			return externalAddr{}, fmt.Errorf("%w: external address %s: credentials in the address are refused; put the password in %s", ErrBadSpec, display, EnvRedisPassword)
		}
		if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
			return externalAddr{}, fmt.Errorf("%w: external address %s: database %q: only database 0 is supported", ErrBadSpec, display, p)
		}
		if u.RawQuery != "" {
			return externalAddr{}, fmt.Errorf("%w: external address %s: URL options (?%s) are not supported", ErrBadSpec, display, u.RawQuery)
		}
		host, port = u.Hostname(), u.Port()
		if port == "" {
			port = "6379"
		}
	} else {
		var err error
		host, port, err = net.SplitHostPort(raw)
		if err != nil {
			return externalAddr{}, fmt.Errorf("%w: external address %q: not host:port or a redis:// URL: %v", ErrBadSpec, raw, err)
		}
	}
	if host == "" {
		return externalAddr{}, fmt.Errorf("%w: external address %s: no host", ErrBadSpec, display)
	}
	ea := externalAddr{addr: net.JoinHostPort(host, port), display: display}
	if !allowRemote {
		ip, err := loopbackIP(ctx, host)
		if err != nil {
			return externalAddr{}, fmt.Errorf("%w: external address %s: %v; only loopback servers (127.0.0.0/8, ::1) are used unless allow_remote is set", ErrBadSpec, display, err)
		}
		ea.addr = net.JoinHostPort(ip.String(), port)
	}
	if useTLS {
		cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		if f := os.Getenv(EnvRedisCA); f != "" {
			pem, err := os.ReadFile(f)
			if err != nil {
				return externalAddr{}, fmt.Errorf("%w: %s: %v", ErrBadSpec, EnvRedisCA, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return externalAddr{}, fmt.Errorf("%w: %s: %s holds no PEM certificate", ErrBadSpec, EnvRedisCA, f)
			}
			cfg.RootCAs = pool
		}
		ea.tls = cfg
	}
	return ea, nil
}

// loopbackIP resolves host (an IP literal is not looked up) and returns one
// of its addresses (IPv4 preferred) if every address it has is a loopback one.
func loopbackIP(ctx context.Context, host string) (net.IP, error) {
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		if !ip.IsLoopback() {
			return nil, fmt.Errorf("%s is not a loopback address", ip)
		}
		return ip, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %v", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s resolves to no address", host)
	}
	best := ips[0].IP
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return nil, fmt.Errorf("%s resolves to %s, not a loopback address", host, ip.IP)
		}
		if ip.IP.To4() != nil && best.To4() == nil {
			best = ip.IP
		}
	}
	return best, nil
}

// redactErr keeps a URL parse error from echoing a password in raw.
func redactErr(err error, raw string) string {
	s := err.Error()
	if u, perr := url.Parse(raw); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			s = strings.ReplaceAll(s, p, "xxxxx")
		}
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		if j := strings.LastIndex(raw, "@"); j > i {
			s = strings.ReplaceAll(s, raw[i+3:j], "xxxxx")
		}
	}
	return s
}

// externalCtl: the harness does not control external servers.
type externalCtl struct{}

func (externalCtl) Pause() error                        { return ErrUnsupported }
func (externalCtl) Resume() error                       { return ErrUnsupported }
func (externalCtl) Kill() error                         { return ErrUnsupported }
func (externalCtl) Restart(context.Context, bool) error { return ErrUnsupported }
func (externalCtl) State() string                       { return "external" }
func (externalCtl) Pid() int                            { return 0 }
