package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/lockchaos/lockchaos/lockimpl/driver"
)

var discoverOnce sync.Once

// discoverDrivers registers the shipped driver locks (drivers/<lang>/*.yaml,
// docs/driver-protocol.md), once; a lock file refused is said on stderr.
func discoverDrivers(stderr io.Writer) {
	discoverOnce.Do(func() {
		if _, err := driver.Discover(); err != nil {
			fmt.Fprintln(stderr, "lockchaos: driver locks:", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	})
}

// resolveLock turns a --lock value into a registered lock's name: a name,
// exec:<command> (a driver), or a lock file's path.
func resolveLock(v string) (string, error) {
	n, err := driver.Resolve(strings.TrimSpace(v))
	if err != nil {
		return "", exitWith(ExitBadInput, fmt.Errorf("--lock %s: %w", v, err))
	}
	return n, nil
}

// resolveLocks is resolveLock for a list.
func resolveLocks(vs []string) ([]string, error) {
	out := make([]string, len(vs))
	for i, v := range vs {
		n, err := resolveLock(v)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// lockOpts parses --lock-opt k=v values into a lock's Options.Extra,
// over what it holds.
func lockOpts(vs []string, extra map[string]string) (map[string]string, error) {
	if len(vs) == 0 {
		return extra, nil
	}
	out := map[string]string{}
	for k, v := range extra {
		out[k] = v
	}
	for _, kv := range vs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--lock-opt %q: not key=value", kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}
