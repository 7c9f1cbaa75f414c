package adapters

import (
	"regexp"
	"testing"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// No adapter names its library's version in its source: the description
// (list locks) and the configuration (results.json lock_config, which
// summary.md and report.html print) take it from the binary's build info,
// so a build against another release is labelled with that release.
func TestAdaptersTakeVersionFromBuildInfo(t *testing.T) {
	version := regexp.MustCompile(`\bv\d+\.\d+`)
	env := lockimpl.Env{Options: lockimpl.Options{}.WithDefaults()}
	configs := map[string]map[string]any{
		"redsync":     (&redsyncLock{env: env}).Config(),
		"redislock":   (&redislockLock{env: env}).Config(),
		"rueidislock": (&rueidislockLock{env: env}).Config(),
	}
	n := 0
	for _, l := range lockimpl.List() {
		if l.Kind != lockimpl.Adapter {
			continue
		}
		n++
		if l.Module == "" {
			t.Errorf("adapter %s declares no Module", l.Name)
		}
		if v := version.FindString(l.Description); v != "" {
			t.Errorf("adapter %s's description names a version (%s): %q", l.Name, v, l.Description)
		}
		cfg, ok := configs[l.Name]
		if !ok {
			t.Errorf("adapter %s: no Config in this test", l.Name)
			continue
		}
		if lib, _ := cfg["library"].(string); version.MatchString(lib) {
			t.Errorf("adapter %s's library %q names a version", l.Name, lib)
		}
		if got, want := cfg["version"], lockimpl.ModuleVersion(l.Module); got != want {
			t.Errorf("adapter %s's version = %v, want %q (the build info's)", l.Name, got, want)
		}
	}
	if n != len(configs) {
		t.Errorf("%d adapters registered, %d in this test", n, len(configs))
	}
}
