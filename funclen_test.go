package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The code stays easy to change (issue 43): no function of the module's
// (tests aside) is over 100 lines, and at most five are over 80. A function
// that grows past them is split where its steps are, each a function with
// a name that says what it does.
func TestFunctionLength(t *testing.T) {
	const most, long, longAllowed = 100, 80, 5
	type fn struct {
		name  string
		lines int
	}
	var over []fn
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "vendor", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > long {
					over = append(over, fn{p + ": " + fd.Name.Name, n})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(over, func(i, j int) bool { return over[i].lines > over[j].lines })
	for _, f := range over {
		if f.lines > most {
			t.Errorf("%s is %d lines, over %d", f.name, f.lines, most)
		}
	}
	if len(over) > longAllowed {
		t.Errorf("%d functions over %d lines, at most %d allowed: %v", len(over), long, longAllowed, over)
	}
}
