package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// The findings' scenarios, from this package's directory.
const (
	noValidityFinding = "../docs/findings/driver-locks-no-validity.yaml"
	clockDriftFinding = "../docs/findings/rueidislock-clock-drift.yaml"
)

// Bad input to bisect exits 3 before anything runs, naming the flag and
// the value.
func TestBisectBadInput(t *testing.T) {
	full := filepath.Join(t.TempDir(), "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	py := []string{"bisect", noValidityFinding, "--lock", "redis-py"}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no lock", []string{"bisect", "smoke", "--versions", "1.0"}, []string{"--lock:"}},
		{"unknown lock", []string{"bisect", "smoke", "--lock", "nosuchlock", "--versions", "1.0"}, []string{"--lock nosuchlock", `"nosuchlock"`}},
		{"built-in lock", []string{"bisect", "gc-pause", "--lock", "simple", "--versions", "1.0"}, []string{"--lock simple", "no library version", "rueidislock"}},
		{"scenario that does not load", []string{"bisect", "no-such-scenario.yaml", "--lock", "redis-py", "--versions", "1.0"}, []string{"scenario no-such-scenario.yaml"}},
		{"empty version list", append(py, "--versions", " , "), []string{"--versions", `" , "`, "no version"}},
		{"no versions", py, []string{"--versions or --from/--to"}},
		{"range backwards", append(py, "--from", "8.0.0", "--to", "5.0.0"), []string{"--from 8.0.0 --to 5.0.0", "newer"}},
		{"unknown check", append(py, "--versions", "8.1.0", "--check", "mutex,mutx"), []string{"--check", `"mutx"`}},
		{"no check expected invalid", []string{"bisect", "smoke", "--lock", "redis-py", "--versions", "8.1.0"}, []string{"--check", "smoke", "expects no check invalid"}},
		{"bad seeds", append(py, "--versions", "8.1.0", "--seeds", "3-1"), []string{"--seeds", `"3-1"`}},
		{"version as a lock option", append(py, "--versions", "8.1.0", "--lock-opt", "version=5.0.8"), []string{"--lock-opt", `"version=5.0.8"`}},
		{"lock option of a Go adapter", []string{"bisect", clockDriftFinding, "--lock", "rueidislock", "--versions", "v1.0.79", "--lock-opt", "a=b"}, []string{"--lock-opt", `"a=b"`}},
		{"missing page", append(py, "--versions", "8.1.0", "--page", "no-such-page.md"), []string{"--page no-such-page.md"}},
		{"out not empty", append(py, "--versions", "8.1.0", "--out", full), []string{"--out " + full, "not empty"}},
		{"backend", append(py, "--versions", "8.1.0", "--backend", "cloud"), []string{"--backend", `"cloud"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if !slices.Contains(args, "--out") {
				args = append(args, "--out", filepath.Join(t.TempDir(), "out"))
			}
			code, stdout, stderr := lockchaos(t, args...)
			wantExit(t, code, ExitBadInput, stdout, stderr)
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("message does not name %q: %s", w, stderr)
				}
			}
		})
	}
}

// --from/--to read each registry's document: npm's, PyPI's (a release
// whose files are all yanked is not one), Maven Central's metadata and the
// Go proxy's list (a module path's capitals escaped).
func TestBisectRegistryVersions(t *testing.T) {
	docs := map[string]string{
		"/npm/@scope%2Fpkg": `{"name":"@scope/pkg","versions":{"1.0.0":{},"1.1.0":{},"2.0.0-beta.1":{},"2.0.0":{}}}`,
		"/pypi/redis/json":  `{"releases":{"4.0.0":[{"yanked":false}],"4.0.1":[{"yanked":true}],"4.1.0rc1":[{}],"4.1.0":[{}],"4.2.0":[]}}`,
		"/maven/org/redisson/redisson/maven-metadata.xml": `<metadata><versioning><versions><version>3.40.2</version><version>4.7.0</version><version>3.9</version></versions></versioning></metadata>`,
		"/go/github.com/!azure/x/@v/list":                 "v1.0.2\nv1.0.10\nv1.0.1\n",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := docs[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	old := registryBase
	registryBase = map[string]string{registryNPM: srv.URL + "/npm/", registryPyPI: srv.URL + "/pypi/", registryMaven: srv.URL + "/maven/", registryGo: srv.URL + "/go/"}
	defer func() { registryBase = old }()
	t.Setenv("GOPROXY", "")
	for _, c := range []struct {
		registry, lib string
		want          []string
	}{
		{registryNPM, "@scope/pkg", []string{"1.0.0", "1.1.0", "2.0.0-beta.1", "2.0.0"}},
		{registryPyPI, "redis", []string{"4.0.0", "4.1.0rc1", "4.1.0"}},
		{registryMaven, "org.redisson:redisson", []string{"3.9", "3.40.2", "4.7.0"}},
		{registryGo, "github.com/Azure/x", []string{"v1.0.1", "v1.0.2", "v1.0.10"}},
	} {
		got, err := listVersions(t.Context(), c.registry, c.lib)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %v, %v; want %v", c.registry, c.lib, got, err, c.want)
		}
	}
	if _, err := listVersions(t.Context(), registryNPM, "no-such-package"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a package the registry does not have: %v", err)
	}
	// A range of the Go adapter's module, the v added.
	tg := &bisectTarget{lock: "x", library: "github.com/Azure/x", module: "github.com/Azure/x", registry: registryGo}
	got, err := bisectVersions(t.Context(), tg, "1.0.1", "1.0.2", "", true)
	if want := []string{"v1.0.1", "v1.0.2", "v1.0.10"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("--versions 1.0.1 --from 1.0.2: %v, %v; want %v", got, err, want)
	}
}

// A Go adapter's versions go through scripts/bisect-go.sh, here with its
// made-up verdicts (BISECT_GO_FAKE: no build, no run): the table has a
// row per version, oldest first, the conclusion names the version where
// the check starts failing, and --page puts the block into a page's
// Versions section, then replaces it.
func TestBisectGoAdapterThroughTheScript(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not on PATH")
	}
	t.Setenv("BISECT_GO_FAKE", "v1.0.19=passes v1.0.34=fails v1.0.79=fails v1.0.5=does_not_build")
	page := filepath.Join(t.TempDir(), "finding.md")
	if err := os.WriteFile(page, []byte("# F\n\n## Versions\n\n| the old table |\n\n## What a fix would look like\n\nfix\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, where := range []string{"added at the end of ## Versions", "replaced its block"} {
		out := filepath.Join(t.TempDir(), "b")
		code, stdout, stderr := lockchaos(t, "bisect", clockDriftFinding, "--lock", "rueidislock", "--versions", "1.0.79,v1.0.19,v1.0.34,v1.0.5",
			"--seeds", "1-3", "--out", out, "--page", page)
		wantExit(t, code, ExitOK, stdout, stderr)
		for _, want := range []string{
			"| version | as run | mutex invalid | verdicts | verdict | seconds | run directory | note |",
			"| v1.0.5 | – | – | – | does not build |",
			"| v1.0.19 | v1.0.19 | – | – | passes |",
			"Conclusion: broken in v1.0.34: passes on v1.0.19, fails from v1.0.34 on (v1.0.34 and v1.0.79); no verdict: v1.0.5 (does not build).",
			"page: " + page + " (" + where + ")",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("run %d: stdout lacks %q:\n%s", i+1, want, stdout)
			}
		}
		var b campaign.Bisect
		readJSON(t, filepath.Join(out, "bisect.json"), &b)
		if len(b.Rows) != 4 || b.Rows[0].Version != "v1.0.5" || b.Rows[3].Version != "v1.0.79" || b.Library != "github.com/redis/rueidis" {
			t.Errorf("bisect.json: %+v", b)
		}
	}
	text, _ := os.ReadFile(page)
	begin, end := campaign.BisectMarkers("rueidislock")
	if s := string(text); strings.Count(s, begin) != 1 || strings.Count(s, end) != 1 || !strings.Contains(s, "| the old table |") ||
		!strings.Contains(s, "`lockchaos bisect "+clockDriftFinding+" --lock rueidislock --seeds 1-3 --versions 1.0.79,v1.0.19,v1.0.34,v1.0.5`") ||
		strings.Index(s, end) > strings.Index(s, "## What a fix") {
		t.Errorf("the page after two runs:\n%s", s)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// A driver lock bisected for real: redis-py over two releases on one seed
// of its finding's scenario (each installed into the driver cache first;
// both fail it), one row each with the version the driver reported.
func TestBisectDriverLock(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH")
	}
	runSlot(t)
	out := filepath.Join(t.TempDir(), "b")
	code, stdout, stderr := lockchaos(t, "bisect", noValidityFinding, "--lock", "redis-py", "--versions", "8.1.0,5.0.8", "--seeds", "1", "--out", out)
	wantExit(t, code, ExitOK, stdout, stderr)
	var b campaign.Bisect
	readJSON(t, filepath.Join(out, "bisect.json"), &b)
	if len(b.Rows) != 2 {
		t.Fatalf("%d rows, want 2:\n%s", len(b.Rows), stdout)
	}
	for i, v := range []string{"5.0.8", "8.1.0"} {
		r := b.Rows[i]
		if r.Version != v || r.AsRun != v || r.Seeds != 1 || r.Dir == "" {
			t.Errorf("row %d: %+v, want %s run on 1 seed by the driver at %s", i, r, v, v)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "seed-1", "results.json")); err != nil {
			t.Errorf("row %d: %v", i, err)
		}
		if !strings.Contains(stdout, "| "+v+" | "+v+" | ") {
			t.Errorf("the table has no row for %s:\n%s", v, stdout)
		}
	}
	if !strings.Contains(stdout, "Conclusion: ") {
		t.Errorf("no conclusion:\n%s", stdout)
	}
}
