package driver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// writeLockFile writes a lock file for the fake driver in mode into
// dir/sub/name.yaml, with the static part caps ("" for none).
func writeLockFile(t *testing.T, dir, sub, name, mode, caps string) string {
	t.Helper()
	exe, _ := os.Executable()
	body := "name: " + name + "\ndescription: a fake\ncommand: [" + exe + ", -test.run=^$]\ndir: .\nenv: {" + fakeEnv + ": " + mode + "}\n"
	if caps != "" {
		body += "library: fakelib\nlanguage: go\ncapabilities: " + caps + "\n"
	}
	p := filepath.Join(dir, sub, name+".yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLockFiles(t *testing.T) {
	dir := t.TempDir()
	// A static lock file: registered without starting the driver, with
	// the capabilities it states.
	p := writeLockFile(t, dir, "go", "fake-static", "good", "[renews]")
	name, err := Resolve(p)
	if err != nil || name != "fake-static" {
		t.Fatalf("Resolve(%s) = %q, %v", p, name, err)
	}
	info, _, err := lockimpl.Lookup(name)
	if err != nil || !info.Renews || info.Reentrant || info.Kind != lockimpl.User {
		t.Errorf("info %+v %v: want a user lock that renews", info, err)
	}
	if again, err := Resolve(p); err != nil || again != name {
		t.Errorf("the same lock file again: %q %v", again, err)
	}
	other := writeLockFile(t, filepath.Join(dir, "x"), "go", "fake-static", "good", "[renews]")
	if _, err := Resolve(other); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), other) {
		t.Errorf("a second lock file of one name: %v, want both paths named", err)
	}
	if _, err := Resolve(writeLockFile(t, dir, "go", "simple", "good", "[]")); err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Errorf("a built-in's name: %v", err)
	}

	// A lock file whose static part disagrees with its hello fails at start.
	bad := writeLockFile(t, dir, "go", "fake-liar", "good", "[reentrant]")
	name, err = Resolve(bad)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := Lookup(name)
	if _, err := New(s, testEnv(nil)); err == nil || !strings.Contains(err.Error(), "capabilities [reentrant], its hello [renews]") {
		t.Errorf("static part against hello: %v", err)
	}

	// Without a static part, and by exec:, the driver is started once.
	dyn := writeLockFile(t, dir, "go", "fake-dynamic", "good", "")
	if name, err = Resolve(dyn); err != nil || name != "fake-dynamic" {
		t.Fatalf("Resolve(%s) = %q, %v", dyn, name, err)
	}
	if info, _, _ := lockimpl.Lookup(name); !info.Renews {
		t.Errorf("dynamic lock file: capabilities %s, want renews (from hello)", info.Capabilities())
	}
	t.Setenv(fakeEnv, "good")
	exe, _ := os.Executable()
	if name, err = Resolve("exec:" + exe + " -test.run=^$"); err != nil || name != "fake-good" {
		t.Errorf("exec: %q %v, want the name of its hello", name, err)
	}
	t.Setenv(fakeEnv, "crash")
	if _, err = Resolve("exec:" + exe + " -test.run=^$ -x"); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("exec: of a driver that crashes: %v", err)
	}
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	writeLockFile(t, dir, "python", "fake-shipped", "good", "[renews, fenced]")
	writeLockFile(t, dir, "node", "fake-unplaced", "good", "")
	t.Setenv("LOCKCHAOS_DRIVERS", dir)
	names, err := Discover()
	if len(names) != 1 || names[0] != "fake-shipped" {
		t.Errorf("discovered %v", names)
	}
	if err == nil || !strings.Contains(err.Error(), "fake-unplaced.yaml: a shipped driver's lock file carries its capabilities") {
		t.Errorf("a shipped lock file without its static part: %v", err)
	}
	info, _, err := lockimpl.Lookup("fake-shipped")
	if err != nil || info.Capabilities() != "fenced, renews" || !strings.Contains(info.Description, "go fakelib") {
		t.Errorf("%+v %v", info, err)
	}
}

func TestLoadSpecRefuses(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		"name: x\n":                                     "command: empty",
		"name: a b\ncommand: [x]\n":                     `name "a b"`,
		"name: x\ncommand: [x]\ncolour: blue\n":         "field colour not found",
		"name: x\ncommand: [x]\ncapabilities: [fast]\n": `capability "fast": not one of`,
	} {
		p := filepath.Join(dir, "l.yaml")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := LoadSpec(p); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: %v, want %q and the path", body, err, want)
		}
	}
}
