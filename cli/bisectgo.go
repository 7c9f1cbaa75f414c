package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/campaign"
)

// A Go adapter's versions are not a lock option: each is a build of the
// repository with the module at that version. scripts/bisect-go.sh does
// that (a copy of the repository's tracked files, go mod edit -require,
// tidy, a replace when a dependency requires a newer version, the build,
// go version -m, then lockchaos run with the version's binary); bisect runs
// it over the versions and reads its versions.tsv back into its table.

// bisectGo runs scripts/bisect-go.sh over the versions into in.out and
// returns its rows, oldest first; the error says the script failed (its
// rows so far are returned with it).
func bisectGo(ctx context.Context, stderr io.Writer, in *bisectInput, scenario string, f *bisectFlags) ([]campaign.BisectRow, error) {
	script, err := findScript("bisect-go.sh")
	if err != nil {
		return nil, fmt.Errorf("--lock %s: a Go adapter's versions are built from lockchaos's source by scripts/bisect-go.sh: %v; run bisect from a checkout of the repository", in.target.lock, err)
	}
	for _, tool := range []string{"bash", "jq", "go", "git", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("scripts/bisect-go.sh needs %s: %v", tool, err)
		}
	}
	args := []string{script, "--out", in.out, "--checks", strings.Join(in.checks, ","), "--backend", f.backend}
	if f.timeout > 0 {
		d := fmt.Sprintf("%ds", int(math.Ceil(f.timeout.Seconds())))
		args = append(args, "--timeout", d, "--build-timeout", d)
	}
	args = append(args, in.target.module, scenario, in.target.lock, campaign.SeedsText(in.seeds))
	args = append(args, in.versions...)
	logPath := filepath.Join(in.out, "bisect-go.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	cmd := treeCommand(ctx, "bash", args...)
	cmd.Stdout, cmd.Stderr = lf, io.MultiWriter(lf, stderr)
	runErr := cmd.Run()
	rows, err := readBisectGo(in.out, in.checks)
	switch {
	case err != nil && runErr != nil:
		return nil, fmt.Errorf("scripts/bisect-go.sh: %v (see %s)", runErr, logPath)
	case err != nil:
		return nil, err
	case runErr != nil && ctx.Err() == nil:
		return rows, fmt.Errorf("scripts/bisect-go.sh: %v (see %s)", runErr, logPath)
	}
	return rows, nil
}

// findScript is scripts/<name> of the repository: from the working
// directory upward, else beside the executable.
func findScript(name string) (string, error) {
	var tried []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			p := filepath.Join(d, "scripts", name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
		tried = append(tried, wd+" and its parents")
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "scripts", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, filepath.Dir(exe))
	}
	return "", fmt.Errorf("no scripts/%s in %s", name, strings.Join(tried, " nor "))
}

// readBisectGo reads the script's versions.tsv (version, built, in_binary,
// seeds, one column per check, verdict, seconds, note) and each version's
// seeds.json (the runs' verdicts).
func readBisectGo(out string, checks []string) ([]campaign.BisectRow, error) {
	b, err := os.ReadFile(filepath.Join(out, "versions.tsv"))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	col := map[string]int{}
	for i, h := range strings.Split(lines[0], "\t") {
		col[h] = i
	}
	for _, h := range append([]string{"version", "in_binary", "seeds", "verdict", "seconds", "note"}, checks...) {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("%s: no column %s in %q", filepath.Join(out, "versions.tsv"), h, lines[0])
		}
	}
	var rows []campaign.BisectRow
	for _, l := range lines[1:] {
		fields := strings.Split(l, "\t")
		get := func(h string) string {
			if i := col[h]; i < len(fields) {
				return fields[i]
			}
			return ""
		}
		rows = append(rows, bisectGoRow(out, get, checks))
	}
	slices.SortStableFunc(rows, func(a, b campaign.BisectRow) int { return campaign.CompareVersions(a.Version, b.Version) })
	return rows, nil
}

// bisectGoRow is one line of versions.tsv as a row (get reads a column).
func bisectGoRow(out string, get func(string) string, checks []string) campaign.BisectRow {
	r := campaign.BisectRow{Version: get("version"), Verdict: get("verdict"), Note: get("note"), Invalid: map[string]int{}}
	if v := get("in_binary"); v != "-" {
		r.AsRun = v
	}
	r.Seeds, _ = strconv.Atoi(get("seeds"))
	r.Seconds, _ = strconv.ParseFloat(get("seconds"), 64)
	for _, c := range checks {
		n, _, _ := strings.Cut(get(c), "/")
		r.Invalid[c], _ = strconv.Atoi(n)
	}
	dir := filepath.Join(out, campaign.VersionDir(r.Version))
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		r.Dir = dir
		var sum campaign.SeedSummary
		if js, err := os.ReadFile(filepath.Join(dir, "seeds.json")); err == nil && json.Unmarshal(js, &sum) == nil {
			r.Verdicts = sum.Verdicts
		}
	}
	return r
}
