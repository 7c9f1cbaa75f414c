package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every option runner and campaign name in a runner.Error's Field (which
// the CLI prints as --field) is a flag of some command: read from their
// source, the Field: literals and badField's first arguments.
func TestErrorFieldsAreFlags(t *testing.T) {
	flags := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	fset := token.NewFileSet()
	n := 0
	for _, dir := range []string{"../runner", "../campaign"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(node ast.Node) bool {
				var lit ast.Expr
				switch x := node.(type) {
				case *ast.KeyValueExpr:
					if k, ok := x.Key.(*ast.Ident); ok && k.Name == "Field" {
						lit = x.Value
					}
				case *ast.CallExpr:
					if fn, ok := x.Fun.(*ast.Ident); ok && fn.Name == "badField" && len(x.Args) > 0 {
						lit = x.Args[0]
					}
				}
				bl, ok := lit.(*ast.BasicLit)
				if !ok || bl.Kind != token.STRING {
					return true
				}
				name, _ := strconv.Unquote(bl.Value)
				n++
				if !flags[name] {
					t.Errorf("%s: Field %q names no flag of any lockchaos command (printed as --%s)", fset.Position(bl.Pos()), name, name)
				}
				return true
			})
		}
	}
	if n < 10 {
		t.Errorf("found %d Field names in runner and campaign; the parse misses them", n)
	}
}
