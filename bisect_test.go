package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "scripts/bisect-go.sh", "--out", out, "--timeout", "180s",
		"github.com/redis/rueidis", "holder-partitioned-long", "rueidislock", "1", "v1.0.79", "v1.0.78", "v1.0.999")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bisect-go.sh: %v\n%s", err, b)
	}
	tsv, err := os.ReadFile(filepath.Join(out, "versions.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	lines := strings.Split(strings.TrimSpace(string(tsv)), "\n")
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
			t.Errorf("%s: %q, want built yes, %s in the binary, 1 seed, mutex and resource 1/1, fails\n%s", v, f, v, b)
		}
	}
	if f := rows["v1.0.999"]; f == nil || f[1] != "no" || f[6] != "does not build" || f[8] == "" {
		t.Errorf("v1.0.999 (not a release): %q, want built no, does not build, with the reason", f)
	}
	md, err := os.ReadFile(filepath.Join(out, "versions.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| v1.0.79 | yes | v1.0.79 | 1 | 1/1 | 1/1 | fails |",
		"- earliest version tried that fails: v1.0.78",
		"- latest version tried that fails: v1.0.79",
		"- versions tried that do not fail: none",
		"- do not build: v1.0.999",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("versions.md lacks %q:\n%s", want, md)
		}
	}
}
