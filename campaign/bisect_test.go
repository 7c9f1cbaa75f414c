package campaign

import (
	"slices"
	"strings"
	"testing"
)

func TestCompareVersions(t *testing.T) {
	ordered := [][]string{
		{"4.0.0rc1", "4.0.0", "4.0.1", "4.1.0", "5.0.8", "8.1.0"},
		{"5.0.0-beta.1", "5.0.0-beta.2", "5.0.0-beta.10", "5.0.0"},
		{"v1.0.9", "v1.0.14", "v1.0.14-go1.18", "v1.0.19", "v1.0.79"},
		{"3.0.0", "3.0.0.post1", "3.0.1"},
		{"3.9", "3.10.0", "3.40.2", "4.7.0"},
	}
	for _, want := range ordered {
		shuffled := slices.Clone(want)
		slices.Reverse(shuffled)
		if got := SortVersions(append(shuffled, want[0], " ")); !slices.Equal(got, want) {
			t.Errorf("SortVersions(%v) = %v, want %v", shuffled, got, want)
		}
	}
	if c := CompareVersions("1.0", "1.0.0"); c != 0 {
		t.Errorf("1.0 vs 1.0.0: %d, want the same version", c)
	}
	for v, pre := range map[string]bool{"5.0.0-beta.2": true, "4.0.0rc1": true, "5.1.0a1": true, "3.0-M1": true, "1.0.0-SNAPSHOT": true,
		"v1.0.14-go1.18": false, "3.0.0.post1": false, "8.1.0": false, "v2.0.0+incompatible": false} {
		if IsPrerelease(v) != pre {
			t.Errorf("IsPrerelease(%s) = %v, want %v", v, !pre, pre)
		}
	}
}

func TestVersionsBetween(t *testing.T) {
	all := []string{"5.0.0", "5.0.1", "5.1.0b1", "5.1.0", "5.2.0", "6.0.0rc1", "6.0.0"}
	for _, c := range []struct {
		from, to string
		want     []string
	}{
		{"5.0.1", "5.2.0", []string{"5.0.1", "5.1.0", "5.2.0"}},
		{"5.1.0", "", []string{"5.1.0", "5.2.0", "6.0.0"}},
		{"", "5.0.1", []string{"5.0.0", "5.0.1"}},
		{"5.1.0b1", "5.1.0", []string{"5.1.0b1", "5.1.0"}}, // an end that is a pre-release brings them in
		{"7.0", "8.0", nil},
	} {
		if got := VersionsBetween(all, c.from, c.to); !slices.Equal(got, c.want) {
			t.Errorf("VersionsBetween(%q, %q) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

func TestBisectRowOf(t *testing.T) {
	run := func(verdict string, checks map[string]string) SeedRun {
		return SeedRun{Verdict: verdict, Checks: checks}
	}
	checks := []string{"mutex", "resource"}
	for _, c := range []struct {
		name    string
		runs    []SeedRun
		verdict string
		seeds   int
		mutex   int
	}{
		{"one seed invalid", []SeedRun{run("invalid", map[string]string{"mutex": "invalid", "resource": "valid"}),
			run("valid", map[string]string{"mutex": "valid", "resource": "valid"})}, BisectFails, 2, 1},
		{"every seed valid", []SeedRun{run("valid", map[string]string{"mutex": "valid", "resource": "valid"})}, BisectPasses, 1, 0},
		{"a check unknown", []SeedRun{run("unknown", map[string]string{"mutex": "unknown", "resource": "valid"})}, BisectUnknown, 1, 0},
		{"a check absent", []SeedRun{run("valid", map[string]string{"mutex": "valid"})}, BisectUnknown, 1, 0},
		{"no seed finished", []SeedRun{{Error: "driver init: no such version"}}, BisectUnknown, 0, 0},
	} {
		sum := Summarize("s", "l", nil, c.runs, false)
		r := BisectRowOf("1.0.0", sum, checks)
		if r.Verdict != c.verdict || r.Seeds != c.seeds || r.Invalid["mutex"] != c.mutex {
			t.Errorf("%s: verdict %s, seeds %d, mutex invalid %d; want %s, %d, %d", c.name, r.Verdict, r.Seeds, r.Invalid["mutex"], c.verdict, c.seeds, c.mutex)
		}
	}
	if got := BisectChecks(map[string]string{"*": "any", "resource": "invalid >=0.8", "mutex": "invalid"}); !slices.Equal(got, checks) {
		t.Errorf("BisectChecks = %v, want the expected-invalid ones in the checker's order %v", got, checks)
	}
}

// rows makes rows from "version=verdict" words.
func rows(words string) []BisectRow {
	var out []BisectRow
	for _, w := range strings.Fields(words) {
		v, verdict, _ := strings.Cut(w, "=")
		out = append(out, BisectRow{Version: v, Verdict: strings.ReplaceAll(verdict, "_", " ")})
	}
	return out
}

func TestBisectConclusion(t *testing.T) {
	for _, c := range []struct{ rows, want string }{
		{"5.1.0=fails 5.3.0=fails 5.8.0=fails", "fails on every version tried (3 versions, 5.1.0 to 5.8.0)."},
		{"5.0.8=passes 8.1.0=passes", "passes on every version tried (5.0.8 and 8.1.0)."},
		{"1.0=fails 1.1=fails 1.2=passes 1.3=passes", "fixed in 1.2: fails on 1.0 and 1.1, passes from 1.2 on (1.2 and 1.3)."},
		{"v1.0.19=passes v1.0.34=fails v1.0.79=fails", "broken in v1.0.34: passes on v1.0.19, fails from v1.0.34 on (v1.0.34 and v1.0.79)."},
		{"1=fails 2=passes 3=fails", "no single boundary: fails on 1, 3; passes on 2."},
		{"1=cannot_install 2=fails 3=unknown", "fails on every version tried (2); no verdict: 1 (cannot install), 3 (unknown)."},
		{"1=does_not_build", "no version tried has a verdict; no verdict: 1 (does not build)."},
	} {
		if got := BisectConclusion(rows(c.rows)); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.rows, got, c.want)
		}
	}
}

func TestBisectTable(t *testing.T) {
	b := &Bisect{Lock: "redis-semaphore-mutex", Library: "redis-semaphore", Scenario: "f.yaml", Date: "2026-12-07", Seeds: []uint64{1, 2, 3, 7},
		Checks: []string{"mutex", "resource"}, Rows: []BisectRow{
			{Version: "5.0.0", Verdict: BisectNoInstall, Seconds: 3.2, Note: "npm error | notarget\nmore"},
			{Version: "5.1.0", AsRun: "5.1.0", Seeds: 2, Invalid: map[string]int{"mutex": 2, "resource": 1}, Verdicts: map[string]int{"invalid": 2},
				Verdict: BisectFails, Seconds: 21.4, Dir: "runs/b/5.1.0"},
		}}
	b.Conclusion = BisectConclusion(b.Rows)
	md := BisectMarkdown(b)
	for _, want := range []string{
		"| version | as run | mutex invalid | resource invalid | verdicts | verdict | seconds | run directory | note |\n|---|---|---|---|---|---|---:|---|---|\n",
		"| 5.0.0 | – | – | – | – | cannot install | 3 | – | npm error / notarget |\n",
		"| 5.1.0 | 5.1.0 | 2/2 | 1/2 | invalid 2 | fails | 21 | `runs/b/5.1.0` | – |\n",
		"seeds 1-3,7 per version; a version fails when mutex or resource is invalid on a seed, passes when mutex and resource are valid on every seed.",
		"**Conclusion:** fails on every version tried (5.1.0); no verdict: 5.0.0 (cannot install).",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("bisect.md lacks %q:\n%s", want, md)
		}
	}
}

func TestReplaceBisectBlock(t *testing.T) {
	block := func(lock, body string) string {
		begin, end := BisectMarkers(lock)
		return begin + "\n" + body + "\n" + end
	}
	page := "# P\n\ntext\n\n## Versions\n\n| old table |\n\nnotes\n\n## What a fix would look like\n\nfix\n"
	got, where := ReplaceBisectBlock(page, "l", block("l", "one"))
	want := "# P\n\ntext\n\n## Versions\n\n| old table |\n\nnotes\n\n" + block("l", "one") + "\n\n## What a fix would look like\n\nfix\n"
	if got != want || !strings.Contains(where, "Versions") {
		t.Fatalf("first write (%s):\n%s\nwant:\n%s", where, got, want)
	}
	// Again: only the lock's block changes; another lock's is added beside it.
	again, where := ReplaceBisectBlock(got, "l", block("l", "two"))
	if again != strings.Replace(want, "one", "two", 1) || where != "replaced its block" {
		t.Errorf("second write (%s):\n%s", where, again)
	}
	other, _ := ReplaceBisectBlock(again, "m", block("m", "three"))
	if !strings.Contains(other, block("l", "two")) || !strings.Contains(other, block("m", "three")) || !strings.HasSuffix(other, "## What a fix would look like\n\nfix\n") {
		t.Errorf("a second lock's block:\n%s", other)
	}
	// A page without a Versions section gets one at its end.
	if got, _ := ReplaceBisectBlock("# P\n\ntext\n", "l", block("l", "x")); got != "# P\n\ntext\n\n## Versions\n\n"+block("l", "x")+"\n" {
		t.Errorf("no Versions section:\n%s", got)
	}
}
