package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// run --seeds runs once per seed, each in its own directory, and reports
// each check's rate over the seeds; --expect judges the cell over them.
func TestRunSeeds(t *testing.T) {
	testenv.Long(t)
	t.Parallel()
	runSlot(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := lockchaos(t, "run", "gc-pause", "--lock", "simple", "--backend", "process",
		"--seeds", "1,3", "--expect", "--out", dir, "-q")
	wantExit(t, code, 0, stdout, stderr)
	for _, want := range []string{"seed 1 ", "seed 3 ", "2 seeds · outcome as-expected", "mutex       invalid in 2/2 (95% CI 0.34–1.00)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, seed := range []string{"1", "3"} {
		r := readResults(t, filepath.Join(dir, "seed-"+seed))
		if want := map[string]uint64{"1": 1, "3": 3}[seed]; r.Seed != want {
			t.Errorf("seed-%s/results.json has seed %d", seed, r.Seed)
		}
	}
	var sum campaign.SeedSummary
	b, err := os.ReadFile(filepath.Join(dir, "seeds.json"))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil || sum.Outcome != "as-expected" || len(sum.Rates["mutex"]) == 0 || sum.Rates["mutex"][0].Hits != 2 {
		t.Errorf("seeds.json: %v %+v", err, sum)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(html), `href="seed-3/report.html"`) {
		t.Errorf("report.html is no index of the seeds' reports: %v", err)
	}
}

// --repeat N runs N seeds from --seed; the flags that contradict each
// other, or a bad list, exit 3 before anything runs.
func TestRunRepeatAndBadSeeds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--seeds", "0"}, `--seeds: "0" is not a seed`},
		{[]string{"--seeds", "3-1"}, "--seeds: \"3-1\": range ends before it starts"},
		{[]string{"--seeds", "1-2", "--repeat", "2"}, "--seeds and --repeat"},
		{[]string{"--seeds", "1-2", "--seed", "4"}, "--seeds and --seed"},
		{[]string{"--repeat", "0"}, "--repeat: 0 is not in 1..1000"},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		code, stdout, stderr := lockchaos(t, append([]string{"run", "smoke", "--backend", "process", "--out", dir, "-q"}, c.args...)...)
		wantExit(t, code, 3, stdout, stderr)
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: message %q does not say %q", c.args, stderr, c.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%v: bad input still made %s", c.args, dir)
		}
	}
	runSlot(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := lockchaos(t, "run", "smoke", "--backend", "process", "--duration", "500ms", "--repeat", "2", "--seed", "5", "--out", dir, "-q")
	wantExit(t, code, 0, stdout, stderr)
	for _, seed := range []string{"seed-5", "seed-6"} {
		if _, err := os.Stat(filepath.Join(dir, seed, "results.json")); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(stdout, "mutex       valid in 2/2") {
		t.Errorf("stdout lacks the rate:\n%s", stdout)
	}
}
