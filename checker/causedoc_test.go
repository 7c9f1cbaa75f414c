package checker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// causeConstants reads every Cause… string constant declared in the
// checker's source files in dir.
func causeConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Cause") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out
}

// missingCauses are the causes whose value docs does not name in
// backquotes.
func missingCauses(causes map[string]string, docs string) []string {
	var out []string
	for name, v := range causes {
		if !strings.Contains(docs, "`"+v+"`") {
			out = append(out, name+" ("+v+")")
		}
	}
	return out
}

// docs/checks.md lists every cause a violation can carry (issue 36: it
// listed 17 of 20).
func TestEveryCauseIsDocumented(t *testing.T) {
	causes := causeConstants(t, ".")
	if len(causes) < 24 || causes["CauseForeignReentry"] != CauseForeignReentry || causes["CauseNoRecovery"] != CauseNoRecovery {
		t.Fatalf("read %d cause constants, want every one of the checker's: %v", len(causes), causes)
	}
	docs, err := os.ReadFile("../docs/checks.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missingCauses(causes, string(docs)) {
		t.Errorf("docs/checks.md does not list the cause %s", m)
	}
	// A cause dropped from the page is caught.
	cut := strings.ReplaceAll(string(docs), "`"+CauseFreedAboveZero+"`", "")
	if m := missingCauses(causes, cut); len(m) != 1 || !strings.Contains(m[0], CauseFreedAboveZero) {
		t.Errorf("a page without %s: missing %v, want it alone", CauseFreedAboveZero, m)
	}
}
