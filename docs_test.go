package main

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The documentation's links are checked here, in the README's test command,
// rather than by a script in CI only: a page moved or a heading renamed fails
// `bash scripts/test.sh` on the machine of whoever moved it.

// readmeMaxLines keeps the README a front door (issue 25): what lockchaos is,
// how to run it and where every topic lives; the topics are pages in docs/.
const readmeMaxLines = 250

// pendingLinksFile lists link targets (repository-relative paths, one a line,
// # for comments) that another branch adds: a link to one of them passes
// until it exists, and then the entry must go.
const pendingLinksFile = "docs/.pending-links"

// TestDocLinks checks that every relative link in README.md, CONTRIBUTING.md
// and docs/*.md names a file or directory of the repository, and that every
// #anchor names a heading of its Markdown page, as GitHub makes its slugs.
func TestDocLinks(t *testing.T) {
	files, err := docFiles(".")
	if err != nil {
		t.Fatal(err)
	}
	pending, err := readPending(".")
	if err != nil {
		t.Fatal(err)
	}
	problems, err := checkLinks(".", files, pending)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d files checked, %d pending targets", len(files), len(pending))
}

// TestReadmeIsAFrontDoor holds the README to its length and to its docs
// index: every page under docs/ is one click from it.
func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; at most %d (move a topic into a page under docs/)", n, readmeMaxLines)
	}
	for _, p := range unlinked(t, "README.md", filepath.Join("docs", "*.md")) {
		t.Errorf("%s is not linked from README.md: add a line for it to the README's Documentation section", p)
	}
}

// TestFindingsIndex holds docs/findings.md to its role: every finding's
// page under docs/findings/ is linked from it (and so two clicks from the
// README, whose Documentation section links the index).
func TestFindingsIndex(t *testing.T) {
	for _, p := range unlinked(t, "docs/findings.md", filepath.Join("docs", "findings", "*.md")) {
		t.Errorf("%s is not linked from docs/findings.md: add it to the index", p)
	}
	if pages, _ := filepath.Glob(filepath.Join("docs", "findings", "*.md")); len(pages) == 0 {
		t.Error("docs/findings/ has no page: the index links none")
	}
}

// unlinked lists the files matching pattern that the Markdown page from
// (a repository-relative path) does not link to.
func unlinked(t *testing.T, from, pattern string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(from))
	if err != nil {
		t.Fatal(err)
	}
	links, err := mdLinks(string(b))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range links {
		p, _, _ := strings.Cut(l.target, "#")
		linked[path.Join(path.Dir(from), p)] = true
	}
	pages, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pages {
		if !linked[filepath.ToSlash(p)] {
			out = append(out, p)
		}
	}
	return out
}

// TestLinkCheckerFindsBrokenLinks runs the checker on a repository of its own
// with one link of each kind, good and broken, so that TestDocLinks passing
// means the links are good and not that the checker sees nothing.
func TestLinkCheckerFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", strings.Join([]string{
		"# Tool",
		"## Three ways in",
		"[ok page](docs/a.md) [ok anchor](docs/a.md#where-a-seeds-time-goes) [ok here](#three-ways-in)",
		"[ok dup](docs/a.md#notes-1) [ok dir](examples) [ok web](https://example.com/x.md#nope)",
		"[ok pending](docs/later.md#anything) [ok code](main.go#L3) ![ok image](docs/a.md)",
		"[bad file](docs/missing.md) [bad anchor](docs/a.md#no-such-heading)",
		"[bad here](#three-ways) [bad up](../outside.md) [bad dup](docs/a.md#notes-2)",
		"`[in code](docs/nowhere.md)`",
		"```",
		"[in a fence](docs/nowhere.md)",
		"```",
		"[ref]: docs/gone.md",
		"",
		"a paragraph whose [link text",
		"wraps](docs/wrapped.md) and `a code span",
		"over lines [x](docs/nowhere.md)` ends",
	}, "\n")+"\n")
	write("docs/a.md", "# A\n\n## Where a seed's time goes\n\n## Notes\n\n## Notes\n\n[back](../README.md#tool) [bad back](../README.md#tools)\n")
	write("examples/x", "")
	write("main.go", "package main\n")
	problems, err := checkLinks(root, []string{"README.md", "docs/a.md"}, map[string]bool{"docs/later.md": true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:6: docs/missing.md: no such file",
		"README.md:6: docs/a.md#no-such-heading: no heading with that anchor in docs/a.md",
		"README.md:7: #three-ways: no heading with that anchor in README.md",
		"README.md:7: ../outside.md: outside the repository",
		"README.md:7: docs/a.md#notes-2: no heading with that anchor in docs/a.md",
		"README.md:12: docs/gone.md: no such file",
		"README.md:15: docs/wrapped.md: no such file",
		"docs/a.md:9: ../README.md#tools: no heading with that anchor in README.md",
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}

	// A pending target that exists now must leave the list.
	write("docs/later.md", "# Later\n")
	problems, err = checkLinks(root, []string{"docs/a.md"}, map[string]bool{"docs/later.md": true})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		"docs/a.md:9: ../README.md#tools: no heading with that anchor in README.md",
		pendingLinksFile + ": docs/later.md exists now: remove it from the list",
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// TestSlug pins GitHub's heading anchors for the kinds of heading the docs
// have: code spans, punctuation, ×, links and repeated spaces.
func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Verdicts and exit codes", "verdicts-and-exit-codes"},
		{"2. `locktest` from a Go test", "2-locktest-from-a-go-test"},
		{"3. A custom binary over `cli.Main`", "3-a-custom-binary-over-climain"},
		{"Seeds: how often a verdict holds", "seeds-how-often-a-verdict-holds"},
		{"results.json and the run report", "resultsjson-and-the-run-report"},
		{"Where a catalog seed's time goes", "where-a-catalog-seeds-time-goes"},
		{"Locks × scenarios", "locks--scenarios"},
		{"Scale-out: shards, workers, merge, Kubernetes", "scale-out-shards-workers-merge-kubernetes"},
		{"The [lock API](docs/locks.md) and its_blocks", "the-lock-api-and-its_blocks"},
		{"**Bold** and *em*", "bold-and-em"},
		{"Über Größe", "über-größe"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// docFiles lists the Markdown files whose links are checked, relative to root.
func docFiles(root string) ([]string, error) {
	files := []string{"README.md", "CONTRIBUTING.md"}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("docs/*.md: %w", err)
	}
	findings, err := filepath.Glob(filepath.Join(root, "docs", "findings", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("docs/findings/*.md: %w", err)
	}
	pages = append(pages, findings...)
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, fmt.Errorf("docs page %s: %w", p, err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files, nil
}

// readPending reads the pending-links list; a missing list is an empty one.
func readPending(root string) (map[string]bool, error) {
	pending := map[string]bool{}
	b, err := os.ReadFile(filepath.Join(root, pendingLinksFile))
	if os.IsNotExist(err) {
		return pending, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pending links: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pending[path.Clean(line)] = true
	}
	return pending, nil
}

// A link found in a Markdown file: its 1-based line and its target as written.
type mdLink struct {
	line   int
	target string
}

var (
	fenceRe    = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	codeSpanRe = regexp.MustCompile("`+[^`]*`+")
	// An inline link or image: [text](target) or [text](target "title");
	// the text may hold one level of brackets.
	inlineLinkRe = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRe     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	headingRe    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlIDRe     = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	linkTextRe   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// mdLinks returns the links of a Markdown text outside code: inline links
// and images (their text may wrap over lines of a paragraph) and reference
// definitions, each with the line its target is on.
func mdLinks(text string) ([]mdLink, error) {
	var links []mdLink
	var block []string // the paragraph being read
	first := 0         // its first line, 1-based
	flush := func() {
		if len(block) == 0 {
			return
		}
		joined := strings.Join(block, "\n")
		// A code span becomes its newlines, so that line numbers hold.
		joined = codeSpanRe.ReplaceAllStringFunc(joined, func(span string) string {
			return strings.Repeat("\n", strings.Count(span, "\n"))
		})
		for _, m := range inlineLinkRe.FindAllStringSubmatchIndex(joined, -1) {
			links = append(links, mdLink{first + strings.Count(joined[:m[2]], "\n"), joined[m[2]:m[3]]})
		}
		for i, line := range strings.Split(joined, "\n") {
			if m := refDefRe.FindStringSubmatch(line); m != nil {
				links = append(links, mdLink{first + i, m[1]})
			}
		}
		block = block[:0]
	}
	inFence := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case fenceRe.MatchString(line):
			flush()
			inFence = !inFence
		case inFence:
		case strings.TrimSpace(line) == "":
			flush()
		default:
			if len(block) == 0 {
				first = n
			}
			block = append(block, line)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading markdown: %w", err)
	}
	return links, nil
}

// anchors returns the anchors of a Markdown text: its headings' slugs, with
// GitHub's -1, -2 for repeats, and explicit <a name|id="...">.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fenceRe.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlIDRe.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := headingRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if k := seen[s]; k > 0 {
			seen[s]++
			s = s + "-" + strconv.Itoa(k)
		} else {
			seen[s] = 1
		}
		out[s] = true
	}
	return out
}

// slug is GitHub's anchor for a heading (github-slugger): link text kept and
// its target dropped, lower case, letters, digits, marks, '_' and '-' kept,
// each space a '-', everything else dropped.
func slug(heading string) string {
	heading = linkTextRe.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkLinks checks the relative links of files (paths relative to root, with
// slashes) and returns one line per broken link, "file:line: target: why",
// then one per pending target that exists now.
func checkLinks(root string, files []string, pending map[string]bool) ([]string, error) {
	var problems []string
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchorCache[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("anchors of %s: %w", rel, err)
		}
		a := anchors(string(b))
		anchorCache[rel] = a
		return a, nil
	}
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, fmt.Errorf("link check: %w", err)
		}
		links, err := mdLinks(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, l := range links {
			why, err := checkLink(root, file, l.target, pending, anchorsOf)
			if err != nil {
				return nil, err
			}
			if why != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", file, l.line, l.target, why))
			}
		}
	}
	var stale []string
	for p := range pending {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err == nil {
			stale = append(stale, fmt.Sprintf("%s: %s exists now: remove it from the list", pendingLinksFile, p))
		}
	}
	slices.Sort(stale)
	return append(problems, stale...), nil
}

// checkLink says what is wrong with one link of file ("" when nothing is).
func checkLink(root, file, target string, pending map[string]bool, anchorsOf func(string) (map[string]bool, error)) (string, error) {
	if u, err := url.Parse(target); err == nil && (u.Scheme != "" || strings.HasPrefix(target, "//")) {
		return "", nil // http(s), mailto: not ours to check
	}
	p, frag, _ := strings.Cut(target, "#")
	p, _, _ = strings.Cut(p, "?")
	p, err := url.PathUnescape(p)
	if err != nil {
		return "bad escape in the path", nil
	}
	frag, err = url.PathUnescape(frag)
	if err != nil {
		return "bad escape in the anchor", nil
	}
	rel := file
	if p != "" {
		if strings.HasPrefix(p, "/") {
			rel = path.Clean(strings.TrimPrefix(p, "/"))
		} else {
			rel = path.Join(path.Dir(file), p)
		}
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "outside the repository", nil
	}
	if pending[rel] {
		return "", nil
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return "no such file", nil
	}
	if frag == "" || fi.IsDir() || !strings.HasSuffix(rel, ".md") {
		return "", nil // anchors into code (#L12) are GitHub's line numbers
	}
	a, err := anchorsOf(rel)
	if err != nil {
		return "", err
	}
	if !a[frag] {
		return "no heading with that anchor in " + rel, nil
	}
	return "", nil
}
