package lockimpl_test

import (
	"runtime/debug"
	"testing"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// A label's version is the one the binary was built with: a required
// version, a replacement's (scripts/bisect-go.sh forces an older release
// with a replace directive when the graph would pick a newer one), and
// "(unknown)" where the build info does not say, never a made-up one.
func TestModuleVersionIn(t *testing.T) {
	const mod = "github.com/redis/rueidis"
	bi := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "github.com/bsm/redislock", Version: "v0.9.4"},
		{Path: mod, Version: "v1.0.79", Replace: &debug.Module{Path: mod, Version: "v1.0.69"}},
		{Path: "github.com/go-redsync/redsync/v4", Version: "v4.18.0", Replace: &debug.Module{Path: "example.com/fork/redsync", Version: "v4.0.1"}},
		{Path: "example.com/local", Version: "v1.2.3", Replace: &debug.Module{Path: "../local"}},
	}}
	for _, tc := range []struct {
		bi         *debug.BuildInfo
		path, want string
	}{
		{bi, "github.com/bsm/redislock", "v0.9.4"},
		{bi, mod, "v1.0.69"},
		{bi, "github.com/go-redsync/redsync/v4", "v4.0.1 (replaced by example.com/fork/redsync)"},
		{bi, "example.com/local", "(replaced by ../local)"},
		{bi, "example.com/absent", lockimpl.UnknownVersion},
		{&debug.BuildInfo{}, mod, lockimpl.UnknownVersion}, // a go test binary's
		{nil, mod, lockimpl.UnknownVersion},
	} {
		if got := lockimpl.ModuleVersionIn(tc.bi, tc.path); got != tc.want {
			t.Errorf("ModuleVersionIn(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	if got := (lockimpl.Info{Name: "x"}).Library(); got != "" {
		t.Errorf("Library() of a lock without a Module = %q, want empty", got)
	}
}
