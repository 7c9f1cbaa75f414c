package usertest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's "Four ways in" snippets are the example module's files,
// verbatim, so what a reader copies is what TestCustomBinary compiles (go
// build and go vet ./... there, tests included).
func TestReadmeSnippetsAreCompiledFiles(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## Four ways in\n")
	if !ok {
		t.Fatal(`README.md has no "## Four ways in" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	files := map[string]string{}
	ex := filepath.Join(root(t), "examples", "customlock")
	err = filepath.WalkDir(ex, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		b, err := os.ReadFile(p)
		files[strings.TrimRight(string(b), "\n")] = p
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var snippets int
	for rest := sec; ; {
		var block string
		if _, rest, ok = strings.Cut(rest, "```go\n"); !ok {
			break
		}
		block, rest, _ = strings.Cut(rest, "\n```")
		snippets++
		if _, ok := files[block]; !ok {
			first, _, _ := strings.Cut(block, "\n")
			t.Errorf("README snippet %d (%q...) is not a file of examples/customlock, verbatim", snippets, first)
		}
	}
	if snippets < 3 {
		t.Errorf("%d Go snippets in the section; want the three ways in (locktest, custom binary, runner.Run)", snippets)
	}
}
