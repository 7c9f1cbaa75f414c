package lockimpl_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// heavy are the dependencies a user's lock package must not inherit by
// importing the API: the harness's containers, proxy and plots, the CLI,
// and the third-party lock libraries the adapters wrap.
var heavy = append(harness, "github.com/go-redsync/", "github.com/bsm/redislock", "github.com/redis/rueidis")

// harness are the harness's own heavy dependencies, which not even the
// adapters (the rest of lockimpl/...) may pull in.
var harness = []string{
	"github.com/testcontainers/", "github.com/Shopify/toxiproxy", "github.com/docker/", "github.com/moby/",
	"gonum.org/", "github.com/spf13/cobra",
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

func heavyIn(pkgs []string, heavy ...string) []string {
	var found []string
	for _, p := range pkgs {
		for _, h := range heavy {
			if strings.HasPrefix(p, h) {
				found = append(found, p)
			}
		}
	}
	return found
}

// The lock API (lockimpl and what it imports) stays lean: go-redis and the
// standard library. The adapters package, which does pull libraries in, is
// the check's control: it must be caught.
func TestAPIIsLean(t *testing.T) {
	if found := heavyIn(deps(t, "github.com/lockchaos/lockchaos/lockimpl"), heavy...); len(found) > 0 {
		t.Errorf("go list -deps lockimpl has heavy packages: %s", strings.Join(found, ", "))
	}
	if found := heavyIn(deps(t, "github.com/lockchaos/lockchaos/lockimpl/..."), harness...); len(found) > 0 {
		t.Errorf("go list -deps lockimpl/... has the harness's heavy packages: %s", strings.Join(found, ", "))
	}
	if found := heavyIn(deps(t, "github.com/lockchaos/lockchaos/lockimpl/adapters"), heavy...); len(found) == 0 {
		t.Errorf("the check finds nothing heavy in lockimpl/adapters, which imports redsync: it cannot fail")
	}
}
