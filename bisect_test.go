package main

import (
	"context"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/scenarios"
)

// TestFindingScenarios loads each finding's minimal scenario
// (docs/findings/*.yaml), which its page's replay command runs: it must
// parse, validate and say what it expects of at least two locks (the
// library's and the reference's).
func TestFindingScenarios(t *testing.T) {
	// A finding in a driver library names the driver lock (drivers/*/*.yaml).
	if _, err := driver.Discover(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("docs", "findings", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario under docs/findings/")
	}
	for _, f := range files {
		s, err := scenarios.LoadFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if len(s.Expect) < 2 {
			t.Errorf("%s expects of %d locks; a finding's scenario names the library's lock and the reference", f, len(s.Expect))
		}
	}
}

// TestBisectGoLogic drives scripts/bisect-go.sh's choice of versions and
// its summary with made-up verdicts (BISECT_GO_FAKE: no build, no run):
// --bisect tries the newest, the oldest (the next one when the oldest does
// not build), then halves the range to the boundary between passing and
// failing; the table comes out oldest first and the summary names the
// earliest and latest failing versions.
func TestBisectGoLogic(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not on PATH")
	}
	fake := "v1.0.1=does_not_build v1.0.2=passes v1.0.3=passes v1.0.4=passes v1.0.5=passes v1.0.6=fails v1.0.7=fails v1.0.8=fails"
	for _, tc := range []struct {
		mode  string
		tried string
		md    []string
	}{
		{"--bisect", "v1.0.1 v1.0.2 v1.0.5 v1.0.6 v1.0.8", []string{
			"- earliest version tried that fails: v1.0.6", "- latest version tried that fails: v1.0.8",
			"- versions tried that do not fail: v1.0.2, v1.0.5", "- do not build: v1.0.1"}},
		{"--timeout=60s", "v1.0.1 v1.0.2 v1.0.3 v1.0.4 v1.0.5 v1.0.6 v1.0.7 v1.0.8", []string{
			"- earliest version tried that fails: v1.0.6", "- latest version tried that fails: v1.0.8",
			"- versions tried that do not fail: v1.0.2, v1.0.3, v1.0.4, v1.0.5", "- do not build: v1.0.1"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			out := t.TempDir()
			args := []string{"scripts/bisect-go.sh", "--out", out}
			if tc.mode == "--bisect" {
				args = append(args, tc.mode)
			}
			args = append(args, "example.com/lib", "gc-pause", "simple", "1")
			args = append(args, strings.Fields(strings.NewReplacer("=does_not_build", "", "=passes", "", "=fails", "").Replace(fake))...)
			tsv, md := runBisect(t, 2*time.Minute, "BISECT_GO_FAKE="+fake, args...)
			var tried []string
			for _, l := range strings.Split(strings.TrimSpace(tsv), "\n")[1:] {
				tried = append(tried, strings.Split(l, "\t")[0])
			}
			if got := strings.Join(tried, " "); got != tc.tried {
				t.Errorf("tried %q, want %q\n%s", got, tc.tried, tsv)
			}
			for _, want := range tc.md {
				if !strings.Contains(md, want) {
					t.Errorf("versions.md lacks %q:\n%s", want, md)
				}
			}
		})
	}
}

// runBisect runs scripts/bisect-go.sh with args (env added to the
// environment), bounded by d, and returns its versions.tsv and versions.md
// (args name their directory after --out).
func runBisect(t *testing.T, d time.Duration, env string, args ...string) (tsv, md string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", args...)
	cmd.Env = append(os.Environ(), env)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bisect-go.sh: %v\n%s", err, b)
	}
	out := args[slices.Index(args, "--out")+1]
	read := func(name string) string {
		c, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(c)
	}
	return read("versions.tsv"), read("versions.md")
}

// TestBisectGoScript runs scripts/bisect-go.sh on the rueidislock finding
// over two released versions that fail it (seed 1) and one that no proxy
// serves, and reads its table: each version built with the version asked
// for in the binary, its checks counted, its verdict, and the summary's
// earliest and latest failing version; the missing one is reported, not
// skipped. Bounded: two builds and two 5 s runs, 10 minutes at most.
func TestBisectGoScript(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not on PATH")
	}
	tsv, md := runBisect(t, 10*time.Minute, "BISECT_GO_FAKE=", "scripts/bisect-go.sh", "--out", t.TempDir(), "--timeout", "180s",
		"github.com/redis/rueidis", "holder-partitioned-long", "rueidislock", "1", "v1.0.79", "v1.0.78", "v1.0.999")
	rows := map[string][]string{}
	lines := strings.Split(strings.TrimSpace(tsv), "\n")
	header := strings.Split(lines[0], "\t")
	if want := "version built in_binary seeds mutex resource verdict seconds note"; strings.Join(header, " ") != want {
		t.Fatalf("header %q, want %q", strings.Join(header, " "), want)
	}
	var order []string
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != len(header) {
			t.Fatalf("line %q has %d fields, want %d", l, len(f), len(header))
		}
		rows[f[0]] = f
		order = append(order, f[0])
	}
	if got := strings.Join(order, " "); got != "v1.0.78 v1.0.79 v1.0.999" {
		t.Errorf("versions tried %q, want oldest first: v1.0.78 v1.0.79 v1.0.999", got)
	}
	for _, v := range []string{"v1.0.78", "v1.0.79"} {
		f := rows[v]
		if f == nil {
			t.Fatalf("%s missing from the table:\n%s", v, tsv)
		}
		if f[1] != "yes" || f[2] != v || f[3] != "1" || f[4] != "1/1" || f[5] != "1/1" || f[6] != "fails" {
			t.Errorf("%s: %q, want built yes, %s in the binary, 1 seed, mutex and resource 1/1, fails", v, f, v)
		}
	}
	if f := rows["v1.0.999"]; f == nil || f[1] != "no" || f[6] != "does not build" || f[8] == "" {
		t.Errorf("v1.0.999 (not a release): %q, want built no, does not build, with the reason", f)
	}
	for _, want := range []string{
		"| v1.0.79 | yes | v1.0.79 | 1 | 1/1 | 1/1 | fails |",
		"- earliest version tried that fails: v1.0.78",
		"- latest version tried that fails: v1.0.79",
		"- versions tried that do not fail: none",
		"- do not build: v1.0.999",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("versions.md lacks %q:\n%s", want, md)
		}
	}
}
