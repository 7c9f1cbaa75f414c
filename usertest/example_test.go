package usertest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
)

// copyExample copies examples/customlock into a temporary directory, as a
// user copies it: every file as shipped, only the replace of lockchaos
// pointed at this checkout (../.. means nothing there). edit, when set,
// changes the copy's file (a path inside the module) before it is written.
func copyExample(t *testing.T, edit func(path, body string) string) string {
	t.Helper()
	ex := filepath.Join(root(t), "examples", "customlock")
	dir := t.TempDir()
	err := filepath.WalkDir(ex, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(ex, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		body := string(b)
		if rel == "go.mod" {
			body = replaceToRoot(t, body)
		}
		if edit != nil {
			body = edit(filepath.ToSlash(rel), body)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// A mutant is a one-line bug in one of the example's locks, and the
// conformance-suite run that must catch it.
type mutant struct {
	name      string
	file      string   // in the example module
	from, to  string   // the line as shipped, and the bug
	args      []string // go test arguments after -count=1 -v
	wantFails []string // in the mutant's output
}

var mutants = []mutant{{
	name: "renewal without its owner check",
	file: "renewlock/renewlock.go",
	from: "\t\treturn lockimpl.RenewOwned(ctx, conn, o, key, token)\n",
	to:   "\t\treturn lockimpl.Classify(\"renew\", key, conn.Set(ctx, key, token, o.TTL).Err())\n",
	// The catalog scenario for a renewal that lands late: not in -short.
	args: []string{"-run", "^TestRenewLock$/^renewal-arrives-late$", "./renewlock"},
	wantFails: []string{"--- FAIL: TestRenewLock/renewal-arrives-late",
		"renewal-arrives-late with renew-lock: verdicts worse than a correct lock of its kind must get",
		"violation: unlock ["},
}, {
	name: "release without its owner check",
	file: "reentrantlock/reentrantlock.go",
	from: "\t\t\t_, err := lockimpl.ReleaseReentrant(ctx, conn, o, key, l.owner)\n",
	to:   "\t\t\terr := conn.Del(ctx, key).Err()\n",
	args: []string{"-short", "-run", "^TestReentrantLock$/^expire-then-unlock$", "./reentrantlock"},
	wantFails: []string{"--- FAIL: TestReentrantLock/expire-then-unlock",
		"expire-then-unlock with reentrant-lock: verdicts worse than a correct lock of its kind must get",
		"violation: "},
}}

// The "done when" for the example: a fresh copy of
// examples/customlock builds, vets and passes `go test -short ./...` with
// plain go commands (no -mod=mod: go.mod and go.sum are complete), its
// renewing and reentrant locks pass the suite's runs below, and a one-line
// bug in each (a renewal without its owner check, a release without its
// owner check) fails the same runs with the checker's violation.
func TestExampleAsShippedAndItsMutants(t *testing.T) {
	testenv.Long(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dir := copyExample(t, nil)
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}, {"test", "-short", "-count=1", "-p=1", "./..."}} {
		if out, err := goTool(ctx, t, dir, args...); err != nil {
			t.Fatalf("go %s in a fresh copy of examples/customlock: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			args := append([]string{"test", "-count=1", "-v"}, m.args...)
			// The shipped lock passes this very run (-short ./... above
			// covers only the short subset).
			if out, err := goTool(ctx, t, dir, args...); err != nil {
				t.Fatalf("the shipped %s fails go %s: %v\n%s", m.file, strings.Join(args, " "), err, out)
			}
			mdir := copyExample(t, func(path, body string) string {
				if path != m.file {
					return body
				}
				if strings.Count(body, m.from) != 1 {
					t.Fatalf("%s does not have the line %q once: the mutant is stale", path, m.from)
				}
				return strings.Replace(body, m.from, m.to, 1)
			})
			out, err := goTool(ctx, t, mdir, args...)
			if err == nil {
				t.Fatalf("%s with a %s passed go %s:\n%s", m.file, m.name, strings.Join(args, " "), out)
			}
			for _, want := range m.wantFails {
				if !strings.Contains(out, want) {
					t.Errorf("mutant output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
