package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/lockimpl"
)

// CONTRIBUTING's recipes are held to the code here (issue 24): each recipe's
// path patterns, signatures and field lists are read from the file itself
// and checked against every existing check, fault kind and lock, so a
// recipe that drifts from the code fails the README's test command. This is
// cheaper than adding a trivial check, fault and lock to a copy of the
// module and building it, and catches the same drift: a file a recipe names
// that an existing example does not follow, a signature or a table line
// that changed, a field renamed or added to Kind or Info. What it cannot
// see (whether the list is complete) the vocabulary tests of each package
// guard: TestKindsMatchTheVocabulary, TestEveryFaultKindIsExplained,
// TestEveryBrokenControlIsCaught, TestLiveCountsEveryCheck.

// recipe is one "## A new …" section of CONTRIBUTING.md.
type recipe struct {
	heading string
	text    string
	// spans are its `code` spans, in order.
	spans []string
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// parseRecipes reads CONTRIBUTING.md's text into its sections.
func parseRecipes(doc string) map[string]*recipe {
	out := map[string]*recipe{}
	for _, sec := range strings.Split(doc, "\n## ")[1:] {
		heading, text, _ := strings.Cut(sec, "\n")
		r := &recipe{heading: heading, text: text}
		// A span may be wrapped over lines.
		for _, m := range codeSpan.FindAllStringSubmatch(strings.Join(strings.Fields(text), " "), -1) {
			r.spans = append(r.spans, m[1])
		}
		out[heading] = r
	}
	return out
}

// problems collects what does not hold.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func (p *problems) read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		p.add("%v", err)
	}
	return string(b)
}

// recipeProblems checks CONTRIBUTING.md's text (doc) against the code.
func recipeProblems(doc string) problems {
	rs := parseRecipes(doc)
	var p problems
	for _, sec := range []struct {
		heading string
		check   func(*problems, *recipe)
	}{{"A new check", checkRecipe}, {"A new fault kind", faultRecipe}, {"A new lock", lockRecipe}} {
		if r := rs[sec.heading]; r == nil {
			p.add("CONTRIBUTING.md has no section %q", sec.heading)
		} else {
			sec.check(&p, r)
		}
	}
	return p
}

var pathSpan = regexp.MustCompile(`^[a-z]+(/[A-Za-z0-9_.<>-]+)+/?$`)

// paths are the recipe's path spans that contain placeholder, and checks
// that every other path span names something that exists (a pattern with
// another placeholder, such as a scenario's <name>, at least one file).
func (r *recipe) paths(p *problems, placeholder string) []string {
	var own []string
	for _, s := range r.spans {
		if !pathSpan.MatchString(s) {
			continue
		}
		if strings.Contains(s, placeholder) {
			own = append(own, s)
			continue
		}
		glob := regexp.MustCompile(`<[^>]+>`).ReplaceAllString(s, "*")
		if m, _ := filepath.Glob(glob); len(m) == 0 {
			p.add("%s: %s names nothing that exists", r.heading, s)
		}
	}
	if len(own) == 0 {
		p.add("%s: no path with %s", r.heading, placeholder)
	}
	// Each file of its own is named with its test where its directory keeps
	// tests beside the code (lockimpl/adapters/ keeps none): the paths above
	// hold the test there for every check, fault kind and lock, and a recipe
	// that sends the test elsewhere has drifted from the code.
	for _, s := range own {
		base, ok := strings.CutSuffix(s, "/"+placeholder+".go")
		if tests, _ := filepath.Glob(base + "/*_test.go"); ok && len(tests) > 0 && !slices.Contains(own, base+"/"+placeholder+"_test.go") {
			p.add("%s: names %s but not its test, %s/%s_test.go", r.heading, s, base, placeholder)
		}
	}
	return own
}

// fields checks a `Type{A, B, …}` span of the recipe against the struct:
// the recipe names every exported field and no other.
func (r *recipe) fields(p *problems, typ string, v any) {
	var named []string
	lit := regexp.MustCompile(`\b` + typ + `\{([^}]*)\}`)
	for _, s := range r.spans {
		for _, m := range lit.FindAllStringSubmatch(s, -1) {
			for _, f := range strings.Split(m[1], ",") {
				named = append(named, strings.TrimSpace(f))
			}
		}
	}
	if named == nil {
		p.add("%s: no %s{…} field list", r.heading, typ)
		return
	}
	rt := reflect.TypeOf(v)
	var have []string
	for i := range rt.NumField() {
		if f := rt.Field(i); f.IsExported() {
			have = append(have, f.Name)
		}
	}
	for _, f := range named {
		if !slices.Contains(have, f) {
			p.add("%s: %s{…} names %s, which %s does not have (fields: %s)", r.heading, typ, f, rt, strings.Join(have, ", "))
		}
	}
	for _, f := range have {
		if !slices.Contains(named, f) {
			p.add("%s: %s{…} does not name %s.%s", r.heading, typ, rt, f)
		}
	}
}

// camel is a name as Go spells it in an identifier: clock-jump → ClockJump.
func camel(name string) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		if r == '-' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
		up = false
	}
	return b.String()
}

// flat is a file name for a name: clock-jump → clockjump.
func flat(name string) string { return strings.ReplaceAll(name, "-", "") }

// flexible is a regexp for a span of Go: any run of spaces matches any.
func flexible(s string) *regexp.Regexp {
	return regexp.MustCompile(strings.Join(strings.Fields(regexp.QuoteMeta(s)), `\s+`))
}

// TestRecipes: each check, fault kind and built-in lock is where its recipe
// says, written as it says.
func TestRecipes(t *testing.T) {
	b, err := os.ReadFile("CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range recipeProblems(string(b)) {
		t.Error(p)
	}
}

// TestRecipesCatchDrift: the drift issue 24 found in the old recipes, put
// back into today's text, fails TestRecipes.
func TestRecipesCatchDrift(t *testing.T) {
	b, err := os.ReadFile("CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if p := recipeProblems(doc); len(p) > 0 {
		t.Skip("the recipes do not hold today (TestRecipes says why)")
	}
	for _, c := range []struct{ what, old, new string }{
		{"a field renamed", "Topologies", "Topology"},
		{"a field left out", "Module}", "}"},
		{"the signature of a check", "func judge<Name>(m *model, c *ctx)", "func check<Name>(m *model, c *ctx) (CheckResult, bool)"},
		{"a check's test elsewhere", "`checker/<name>_test.go`", "`checker/checker_test.go`"},
		{"a file per check", "`checker/<name>.go`", "`checker/<name>s.go`"},
		{"a file per fault kind", "`faults/<kind>_test.go`", "`faults/<kind>_spec.go`"},
		{"a file that is gone", "`faults/node.go`", "`faults/reshard.go`"},
		{"a kind with a scenario listed as without one", "without one yet: none", "without one yet: `latency`"},
		{"the list of kinds without a scenario gone", "Kinds\n   without one yet", "Kinds\n   still lacking one"},
	} {
		if !strings.Contains(doc, c.old) {
			t.Fatalf("%s: CONTRIBUTING.md has no %q", c.what, c.old)
		}
		if p := recipeProblems(strings.Replace(doc, c.old, c.new, 1)); len(p) == 0 {
			t.Errorf("%s (%q for %q): TestRecipes does not catch it", c.what, c.new, c.old)
		}
	}
}

// checkRecipe: every check is checker/<name>.go with its test, defines its
// result (and its judge, unless its table line has none) with the recipe's
// signatures, and has the recipe's constant and table line.
func checkRecipe(p *problems, r *recipe) {
	table := p.read("checker/checker.go")
	var sigs []string
	for _, s := range r.spans {
		if strings.HasPrefix(s, "func ") && strings.Contains(s, "<Name>") {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) != 2 {
		p.add("the check recipe shows %d signatures with <Name> (%q), want judge and result", len(sigs), sigs)
		return
	}
	paths := r.paths(p, "<name>")
	for _, name := range checker.AllChecks {
		expand := strings.NewReplacer("<name>", name, "<Name>", camel(name)).Replace
		for _, pat := range paths {
			if _, err := os.Stat(expand(pat)); err != nil {
				p.add("check %s: %s: %v", name, pat, err)
			}
		}
		src := p.read("checker/" + name + ".go")
		for _, sig := range sigs {
			judge := strings.HasPrefix(sig, "func judge")
			if judge && strings.Contains(table, "{Check"+camel(name)+", nil,") {
				continue // a check without a judge (faults)
			}
			if !flexible(expand(sig)).MatchString(src) {
				p.add("check %s: checker/%s.go has no %s", name, name, expand(sig))
			}
		}
		for _, s := range r.spans {
			if strings.HasPrefix(s, "Check<Name>") || strings.HasPrefix(s, "{Check<Name>") {
				want := expand(s)
				if i := strings.Index(want, ", judge"); i > 0 {
					want = want[:i+1] // the table line: its name, the rest is checked above
				}
				if !flexible(want).MatchString(table) {
					p.add("check %s: checker/checker.go has no %s", name, want)
				}
			}
		}
	}
}

// faultRecipe: every registered kind is faults/<kind>.go, registered there
// in one Register(Kind{…}) under its Fault<Kind> name, with its test; the
// recipe's Kind{…} is the Kind struct's fields.
func faultRecipe(p *problems, r *recipe) {
	r.fields(p, "Kind", faults.Kind{})
	vocab := p.read("history/vocab.go")
	paths := r.paths(p, "<kind>")
	for _, k := range faults.Kinds() {
		konst := "Fault" + camel(k.Name)
		if !regexp.MustCompile(`\b` + konst + `\s*=\s*"` + regexp.QuoteMeta(k.Name) + `"`).MatchString(vocab) {
			p.add("fault %s: history/vocab.go has no %s = %q", k.Name, konst, k.Name)
		}
		for _, pat := range paths {
			if _, err := os.Stat(strings.ReplaceAll(pat, "<kind>", flat(k.Name))); err != nil {
				p.add("fault %s: %s: %v", k.Name, pat, err)
			}
		}
		file := "faults/" + flat(k.Name) + ".go"
		src := p.read(file)
		if n := strings.Count(src, "Register(Kind{"); n != 1 || !regexp.MustCompile(`Name:\s*history\.`+konst+`,`).MatchString(src) {
			p.add("fault %s: %s does not register it (and it alone) in one Register(Kind{Name: history.%s, …})", k.Name, file, konst)
		}
	}
	// Each kind fires in a catalog scenario, or the recipe lists it among
	// the kinds without one ("Kinds without one yet …: `a`, `b` (…").
	var unlisted []string
	text := strings.Join(strings.Fields(r.text), " ")
	if _, after, ok := strings.Cut(text, "Kinds without one yet"); ok {
		list, _, _ := strings.Cut(after, "(")
		for _, m := range codeSpan.FindAllStringSubmatch(list, -1) {
			unlisted = append(unlisted, m[1])
		}
	} else {
		p.add("%s: no list of the kinds without a catalog scenario (\"Kinds without one yet\")", r.heading)
	}
	var catalog strings.Builder
	for _, f := range p.glob("scenarios/catalog/*.yaml") {
		catalog.WriteString(p.read(f))
	}
	for _, k := range faults.Kinds() {
		used := regexp.MustCompile(`(?m)kind:\s*"?` + regexp.QuoteMeta(k.Name) + `"?\s*$`).MatchString(catalog.String())
		switch listed := slices.Contains(unlisted, k.Name); {
		case !used && !listed:
			p.add("fault %s: no catalog scenario fires it, and the recipe does not list it among the kinds without one", k.Name)
		case used && listed:
			p.add("fault %s: the recipe lists it among the kinds without a catalog scenario, but one fires it", k.Name)
		}
	}
	for _, f := range p.glob("faults/*.go") {
		if strings.Contains(p.read(f), "amend(") {
			p.add("%s amends a kind after it is registered: the recipe says one literal", f)
		}
	}
}

// lockRecipe: every built-in lock is registered in lockimpl/<lock>.go (a
// variant beside the lock it varies, an adapter in lockimpl/adapters/), is
// named by a test and has a row in docs/locks.md; the recipe's Info{…} is
// the Info struct's fields.
func lockRecipe(p *problems, r *recipe) {
	r.fields(p, "Info", lockimpl.Info{})
	r.paths(p, "<lock>")
	docs := p.read("docs/locks.md")
	var tests strings.Builder
	for _, f := range p.glob("lockimpl/*_test.go") {
		tests.WriteString(p.read(f))
	}
	for _, l := range lockimpl.List() {
		if l.Kind == lockimpl.User {
			continue
		}
		file := "lockimpl/" + flat(l.Name) + ".go"
		if l.Kind == lockimpl.Adapter {
			file = "lockimpl/adapters/" + flat(l.Name) + ".go"
		} else if _, err := os.Stat(file); err != nil {
			// A variant registers beside the lock it varies.
			for _, base := range lockimpl.Names() {
				if base != l.Name && strings.HasPrefix(l.Name, base+"-") {
					file = "lockimpl/" + flat(base) + ".go"
				}
			}
		}
		if !regexp.MustCompile(`Name:\s*"` + regexp.QuoteMeta(l.Name) + `"`).MatchString(p.read(file)) {
			p.add("lock %s: %s does not register it", l.Name, file)
		}
		if !strings.Contains(tests.String(), `"`+l.Name+`"`) {
			p.add("lock %s: no test in lockimpl names it", l.Name)
		}
		if !strings.Contains(docs, "| `"+l.Name+"` |") {
			p.add("lock %s: no row in docs/locks.md", l.Name)
		}
	}
}

func (p *problems) glob(pattern string) []string {
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		p.add("%s: %v (%d files)", pattern, err, len(m))
	}
	return m
}
