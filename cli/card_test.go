package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCardBadInput: the card refuses bad flags before it runs anything.
func TestCardBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no locks", []string{"card"}, "locks"},
		{"unknown lock", []string{"card", "--locks", "simple,nosuchlock"}, "nosuchlock"},
		{"seeds", []string{"card", "--locks", "simple", "--seeds", "x"}, "--seeds"},
		{"scenario", []string{"card", "--locks", "simple", "--scenarios", "no-such-scenario"}, "no-such-scenario"},
		{"budget", []string{"card", "--locks", "simple", "--budget", "-1s"}, "--budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			code, stdout, stderr := lockchaos(t, append(c.args, "--backend", "process", "--out", filepath.Join(dir, "card"), "--cache", filepath.Join(dir, "cache"))...)
			wantExit(t, code, 3, stdout, stderr)
			if !strings.Contains(stderr, c.want) {
				t.Errorf("message does not name %q: %s", c.want, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "card", "card.html")); err == nil {
				t.Error("bad input still wrote a card")
			}
		})
	}
}
