package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// startRedis starts a redis-server through the process backend with extra
// config args, or skips when there is none.
func startRedis(t *testing.T, extra ...string) *Node {
	t.Helper()
	testenv.Need(t, "redis-server")
	bin, err := lookRedisServer("")
	if err != nil {
		t.Fatal(err)
	}
	pc := &Cluster{Spec: Spec{Dir: t.TempDir()}}
	t.Cleanup(func() { _ = pc.Stop() })
	n, err := pc.startServer(context.Background(), bin, "n1", extra)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestExternalSingleWithPassword(t *testing.T) {
	const secret = "s3cret-Pw-9f1c"
	srv := startRedis(t)
	ctx := context.Background()
	// waitReady (process backend) needs PING without AUTH: set it after.
	setup := &Cluster{}
	defer setup.Stop()
	if err := setup.AdminClient(srv).ConfigSet(ctx, "requirepass", secret).Err(); err != nil {
		t.Fatal(err)
	}
	check := &Cluster{password: secret}
	defer check.Stop()
	_, port, _ := net.SplitHostPort(srv.ServerAddr)

	// Wrong password: an infrastructure error that does not show it.
	t.Setenv(EnvRedisPassword, "wrong-"+secret)
	_, err := Start(ctx, Spec{Backend: External, Addrs: []string{srv.ServerAddr}})
	if !errors.Is(err, ErrInfra) || strings.Contains(err.Error(), secret) {
		t.Fatalf("wrong password: %v", err)
	}

	t.Setenv(EnvRedisPassword, secret)
	for _, addr := range []string{srv.ServerAddr, "localhost:" + port, "redis://127.0.0.1:" + port, "redis://localhost:" + port + "/0"} {
		c, err := Start(ctx, Spec{Backend: External, Addrs: []string{addr}})
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if c.Nodes[0].Addr != "127.0.0.1:"+port {
			t.Errorf("%s: node addr %s, want pinned 127.0.0.1:%s", addr, c.Nodes[0].Addr, port)
		}
		cl := c.NewClient(c.Endpoints()[0], ClientOptions{})
		if err := cl.Set(ctx, "k", addr, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := c.AdminClient(c.Nodes[0]).Get(ctx, "k").Result(); err != nil || v != addr {
			t.Fatalf("GET = %q, %v", v, err)
		}
		ctl := c.Nodes[0].Ctl
		for name, err := range map[string]error{"pause": ctl.Pause(), "resume": ctl.Resume(), "kill": ctl.Kill(), "restart": ctl.Restart(ctx, true)} {
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s: %v, want ErrUnsupported", name, err)
			}
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		// The user's server keeps running.
		if err := check.AdminClient(srv).Ping(ctx).Err(); err != nil {
			t.Fatalf("server gone after Stop: %v", err)
		}
	}
}

func TestExternalIndependent(t *testing.T) {
	t.Setenv(EnvRedisPassword, "")
	a, b := startRedis(t), startRedis(t)
	ctx := context.Background()
	c, err := Start(ctx, Spec{Backend: External, Topology: Independent, Addrs: []string{a.ServerAddr, b.ServerAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if eps := c.Endpoints(); len(eps) != 2 || eps[0].Addr == eps[1].Addr || c.Spec.Nodes != 2 {
		t.Fatalf("endpoints %+v, nodes %d", eps, c.Spec.Nodes)
	}
	_, err = Start(ctx, Spec{Backend: External, Topology: Independent, Addrs: []string{a.ServerAddr, "redis://" + a.ServerAddr}})
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate address: %v", err)
	}
	_, err = Start(ctx, Spec{Backend: External, Topology: Single, Addrs: []string{a.ServerAddr, b.ServerAddr}})
	if !errors.Is(err, ErrBadSpec) {
		t.Errorf("two addresses for single: %v", err)
	}
	_, err = Start(ctx, Spec{Backend: External, Topology: Sentinel, Addrs: []string{a.ServerAddr}})
	if !errors.Is(err, ErrBadSpec) {
		t.Errorf("sentinel topology: %v", err)
	}
}

// Non-loopback addresses are refused before any connection is tried (IP
// literals only here, so the test does not even ask a resolver).
func TestExternalRefusesRemote(t *testing.T) {
	ctx := context.Background()
	for _, addr := range []string{"10.1.2.3:6379", "redis://192.0.2.1:6379", "rediss://[2001:db8::1]:6380", "0.0.0.0:6379"} {
		_, err := Start(ctx, Spec{Backend: External, Addrs: []string{addr}})
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for addr, want := range map[string]string{
		"redis://user:hunter2-xyz@127.0.0.1:6379": "credentials",
		"http://127.0.0.1:6379":                   "scheme",
		"redis://127.0.0.1:6379/3":                "database",
		"redis://127.0.0.1:6379?pool_size=3":      "options",
		"127.0.0.1":                               "host:port",
	} {
		_, err := Start(ctx, Spec{Backend: External, Addrs: []string{addr}})
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v (want %q)", addr, err, want)
		}
	}
	if _, err := Start(ctx, Spec{Backend: External}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("no addrs: %v", err)
	}
	// AllowRemote lifts the check; parsing alone (no connection) shows it.
	ea, err := parseExternal(ctx, "rediss://10.1.2.3:6380", false, true)
	if err != nil || ea.addr != "10.1.2.3:6380" || ea.tls == nil || ea.tls.ServerName != "10.1.2.3" {
		t.Errorf("allow remote: %+v, %v", ea, err)
	}
	ea, err = parseExternal(ctx, "127.0.0.1:6379", true, false)
	if err != nil || ea.tls == nil {
		t.Errorf("forced TLS: %+v, %v", ea, err)
	}
}

func TestExternalTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	tlsPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	srv := startRedis(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-ca-cert-file", certFile, "--tls-auth-clients", "no")
	_ = srv
	t.Setenv(EnvRedisPassword, "")
	t.Setenv(EnvRedisCA, certFile)
	ctx := context.Background()
	c, err := Start(ctx, Spec{Backend: External, Addrs: []string{"rediss://localhost:" + strconv.Itoa(tlsPort)}, Proxy: true})
	if err != nil {
		if strings.Contains(err.Error(), "tls") && strings.Contains(err.Error(), "not") {
			t.Skipf("redis-server without TLS? %v", err)
		}
		t.Fatal(err)
	}
	defer c.Stop()
	cl := c.NewClient(c.Endpoints()[0], ClientOptions{})
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Through the proxy too (TLS passes through it).
	if _, err := c.MeasurePing(ctx, c.Nodes[0], time.Second); err != nil {
		t.Fatal(err)
	}
	// Plain text to the TLS port fails.
	t.Setenv(EnvRedisCA, "")
	if _, err := Start(ctx, Spec{Backend: External, Addrs: []string{"127.0.0.1:" + strconv.Itoa(tlsPort)}}); !errors.Is(err, ErrInfra) {
		t.Errorf("plain text to a TLS port: %v", err)
	}
}

func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestMergeNotify(t *testing.T) {
	for _, tc := range []struct{ have, want string }{
		{"", "Kg$hxe"},
		{"Ex", "ExKg$he"},
		{"AKE", "AKE"}, // A covers g$lshzxetd
		{"KEA", "KEA"},
		{"Kg$hxe", "Kg$hxe"},
	} {
		if got := MergeNotify(tc.have, notifyFlags); got != tc.want {
			t.Errorf("MergeNotify(%q) = %q, want %q", tc.have, got, tc.want)
		}
	}
}

// DeleteKeys removes the matches of its pattern and nothing else, and
// refuses a pattern that is not a prefix's.
func TestDeleteKeysOnlyPrefix(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	c := &Cluster{Nodes: []*Node{srv}}
	defer c.Stop()
	a := c.AdminClient(srv)
	for _, k := range []string{"run:{k0}", "run:{k0}:fence", "runner", "other", "ru*n:x"} {
		if err := a.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"", "*"} {
		if _, err := c.DeleteKeys(ctx, bad); !errors.Is(err, ErrBadSpec) {
			t.Errorf("DeleteKeys(%q) = %v, want refused", bad, err)
		}
	}
	found, err := c.FindKeys(ctx, "run:*", 10)
	if err != nil || len(found["n1"]) != 2 {
		t.Fatalf("FindKeys = %v, %v", found, err)
	}
	n, err := c.DeleteKeys(ctx, "run:*")
	if err != nil || n != 2 {
		t.Fatalf("DeleteKeys = %d, %v", n, err)
	}
	if left := a.Exists(ctx, "runner", "other", "ru*n:x").Val(); left != 3 {
		t.Errorf("%d of the 3 other keys left", left)
	}
}
