package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

func TestBuildInfoOf(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Path: "github.com/lockchaos/lockchaos", Version: "v0.3.1"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "false"}, {Key: "vcs.time", Value: "2026-11-26T02:00:00Z"}}}
	dirty := &debug.BuildInfo{Main: debug.Module{Path: "github.com/lockchaos/lockchaos", Version: "v0.0.0-20261126-0123abcd+dirty"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string // --version's line
	}{
		{"tagged", stamped, "lockchaos v0.3.1 (revision 0123abcd, go1.99 linux/amd64)"},
		{"dirty", dirty, "lockchaos v0.0.0-20261126-0123abcd+dirty (revision 0123abcd+dirty, go1.99 linux/amd64)"},
		{"not stamped", &debug.BuildInfo{Main: debug.Module{Path: "github.com/lockchaos/lockchaos", Version: "(devel)"}},
			"lockchaos (devel) (revision unknown (not stamped: go run, or built with -buildvcs=false or outside the repository), go1.99 linux/amd64)"},
		{"no build info", nil, "lockchaos (unknown) (revision unknown (not stamped: go run, or built with -buildvcs=false or outside the repository), go1.99 linux/amd64)"},
	} {
		if got := buildInfoOf(c.bi, "go1.99 linux/amd64").short(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	var b strings.Builder
	buildInfoOf(stamped, "go1.99 linux/amd64").write(&b)
	if want := "lockchaos v0.3.1\nmodule:   github.com/lockchaos/lockchaos\nrevision: 0123abcd\ncommitted: 2026-11-26T02:00:00Z\ngo:       go1.99 linux/amd64\n"; b.String() != want {
		t.Errorf("version:\n%s\nwant:\n%s", b.String(), want)
	}
}

// Both ways of asking print this binary's build, and `version` takes no
// argument.
func TestVersionCommands(t *testing.T) {
	code, out, errOut := lockchaos(t, "--version")
	wantExit(t, code, 0, out, errOut)
	if want := readBuildInfo().short() + "\n"; out != want || !strings.Contains(out, runtime.Version()) {
		t.Errorf("--version printed %q, want %q", out, want)
	}
	code, out, errOut = lockchaos(t, "version")
	wantExit(t, code, 0, out, errOut)
	if !strings.HasPrefix(out, "lockchaos ") || !strings.Contains(out, "\nrevision: ") || !strings.Contains(out, "go:       "+runtime.Version()) {
		t.Errorf("version printed %q", out)
	}
	if code, _, _ := lockchaos(t, "version", "extra"); code != 3 {
		t.Errorf("version extra: exit %d, want 3", code)
	}
}

// A binary built from a clone of this repository names the clone's
// revision, +dirty when the tree is modified, and the Go that built it.
// (The build environment here sets GOFLAGS=-buildvcs=false, and a git
// worktree is not stamped: the test builds from a fresh clone with
// -buildvcs=true.)
func TestVersionOfBuiltBinary(t *testing.T) {
	testenv.Long(t)
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "clone", "-q", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	rev := strings.TrimSpace(string(head))
	// A modified tracked file makes the tree dirty.
	f, err := os.OpenFile(filepath.Join(clone, "go.mod"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n// modified\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bin := filepath.Join(t.TempDir(), "lockchaos")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	build.Dir = clone
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("lockchaos version: %v", err)
	}
	lines := strings.Split(string(out), "\n")
	if !strings.Contains(string(out), "revision: "+rev+"+dirty\n") || !strings.Contains(lines[0], rev[:12]) || !strings.Contains(string(out), "go:       "+runtime.Version()) {
		t.Errorf("lockchaos version printed:\n%s\nwant revision %s+dirty, a pseudo-version naming it, %s", out, rev, runtime.Version())
	}
	short, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("lockchaos --version: %v", err)
	}
	if !strings.Contains(string(short), "(revision "+rev+"+dirty, ") {
		t.Errorf("lockchaos --version printed %q, want revision %s+dirty", short, rev)
	}
}
