package cli

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/lockimpl"
	"github.com/lockchaos/lockchaos/lockimpl/driver"
	"github.com/lockchaos/lockchaos/runner"
)

// bisectTarget is the lock a bisect runs and its library's versions:
// where they are listed and how one is made available.
type bisectTarget struct {
	lock    string
	library string // the npm or PyPI name, Maven group:artifact, Go module
	// registry lists the library's versions for --from/--to ("": unknown).
	registry string
	// module is a Go adapter's module (its versions built by
	// scripts/bisect-go.sh); "" for a driver lock.
	module string
	// install puts a version into the driver cache: the script and its
	// arguments ("" script: the driver installs on its own, or refuses).
	installScript string
	installArgs   func(v string) []string
}

// driverLanguages are the shipped drivers' languages (drivers/<language>/,
// or a driver's hello): their registry and the script that installs a
// release of the library into the driver cache, scripts/drivers-<x>.sh.
var driverLanguages = map[string]struct {
	registry, script string
	args             func(lib, v string) []string
}{
	"python": {registryPyPI, "drivers-python.sh", func(lib, v string) []string { return []string{"--print-python", "--version", lib + "==" + v} }},
	"node":   {registryNPM, "drivers-node.sh", func(lib, v string) []string { return []string{"--version", lib + "@" + v} }},
	"java":   {registryMaven, "drivers-java.sh", func(_, v string) []string { return []string{"--jar", v} }},
}

// resolveBisectTarget is --lock's lock with its library: a Go adapter
// (lockimpl.Info.Module) or a driver lock that names its library.
func resolveBisectTarget(v string) (*bisectTarget, error) {
	name, err := resolveLock(v)
	if err != nil {
		return nil, err
	}
	info, _, err := lockimpl.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("--lock %s: %v", v, err)
	}
	if info.Module != "" {
		return &bisectTarget{lock: name, library: info.Module, registry: registryGo, module: info.Module}, nil
	}
	spec, ok := driver.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("--lock %s: a %s lock built into this binary, with no library version to try; bisect takes a Go adapter (%s) or a driver lock", v, info.Kind, strings.Join(goAdapters(), ", "))
	}
	if spec.Library == "" {
		return nil, fmt.Errorf("--lock %s: its driver (%s) names no library, so it has no versions to try", v, spec.Label())
	}
	t := &bisectTarget{lock: name, library: spec.Library}
	lang := spec.Language
	if spec.File != "" {
		if d := filepath.Base(filepath.Dir(spec.File)); driverLanguages[d].script != "" {
			lang = d
		}
	}
	if l, ok := driverLanguages[lang]; ok {
		t.registry = l.registry
		// A shipped driver's lock file is drivers/<language>/<lock>.yaml; the
		// scripts are beside drivers/.
		if spec.File != "" {
			script := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(spec.File))), "scripts", l.script)
			if _, err := os.Stat(script); err == nil {
				t.installScript = script
				t.installArgs = func(v string) []string { return l.args(spec.Library, v) }
			}
		}
	}
	return t, nil
}

// goAdapters are the registered locks with a Go module.
func goAdapters() []string {
	var out []string
	for _, n := range lockimpl.Names() {
		if info, _, err := lockimpl.Lookup(n); err == nil && info.Module != "" {
			out = append(out, n)
		}
	}
	return out
}

// normalize spells a version as the library's registry does: a Go
// module's versions start with v.
func (t *bisectTarget) normalize(v string) string {
	v = strings.TrimSpace(v)
	if t.module != "" && v != "" && v[0] >= '0' && v[0] <= '9' {
		return "v" + v
	}
	return v
}

// bisectDriver runs a driver lock's versions in this process, each
// installed first by its driver's script.
func bisectDriver(ctx context.Context, stderr io.Writer, in *bisectInput, f *bisectFlags) []campaign.BisectRow {
	t := in.target
	p := campaign.BisectPlan{
		Options:  runner.Options{Setup: runner.Setup{Backend: f.backend}, Scenario: in.scenario, Lock: t.lock, Out: in.out},
		Seeds:    in.seeds,
		Checks:   in.checks,
		Versions: in.versions,
		Timeout:  f.timeout,
		OnVersion: func(v string) {
			fmt.Fprintf(stderr, "bisect: %s %s: install and run seeds %s\n", t.library, v, campaign.SeedsText(in.seeds))
		},
		OnRow: func(r campaign.BisectRow) { fmt.Fprintln(stderr, bisectRowLine(r, in.checks)) },
	}
	if t.installScript != "" {
		p.Install = func(ctx context.Context, v, log string) error {
			return runLogged(ctx, log, "bash", append([]string{t.installScript}, t.installArgs(v)...)...)
		}
	}
	return campaign.BisectDriver(ctx, p)
}

// bisectRowLine is a version's progress line.
func bisectRowLine(r campaign.BisectRow, checks []string) string {
	var cs []string
	for _, c := range checks {
		if r.Seeds > 0 {
			cs = append(cs, fmt.Sprintf("%s %d/%d", c, r.Invalid[c], r.Seeds))
		}
	}
	cs = append(cs, fmt.Sprintf("%.0f s", r.Seconds))
	line := fmt.Sprintf("bisect: %s: %s (%s)", r.Version, r.Verdict, strings.Join(cs, ", "))
	if r.Note != "" {
		line += ": " + r.Note
	}
	return line
}

// runLogged runs a command with its output into the file log; its error
// names the command and the line of the log that says why.
func runLogged(ctx context.Context, log, name string, args ...string) error {
	lf, err := os.Create(log)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := treeCommand(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Run(); err != nil {
		what := filepath.Base(args[0]) + " " + strings.Join(args[1:], " ")
		return fmt.Errorf("%s: %s (%v; %s)", what, why(log), err, filepath.Base(log))
	}
	return nil
}

// missingLine is a line of an installer's output that says the version
// is not there (pip, npm, Maven), errorLine one that says something failed.
var (
	missingLine = regexp.MustCompile(`(?i)no matching|notarget|could not (find|resolve)|not found|does not exist`)
	errorLine   = regexp.MustCompile(`(?i)(^|\W)(error|err!|cannot|failed)(\W|$)`)
)

// why is the first line of the log that says the version is missing, else
// the first that reads as an error, else its last line.
func why(log string) string {
	f, err := os.Open(log)
	if err != nil {
		return "no log"
	}
	defer f.Close()
	missing, failed, last := "", "", ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		last = l
		if missing == "" && missingLine.MatchString(l) {
			missing = l
		}
		if failed == "" && errorLine.MatchString(l) {
			failed = l
		}
	}
	first := cmp.Or(missing, failed, last)
	if len(first) > 160 {
		first = first[:157] + "..."
	}
	return strings.ReplaceAll(first, "|", "/")
}

// treeCommand is exec.CommandContext whose cancellation stops the
// command's whole tree (timeout(1), npm, go build, a lockchaos run below
// it): SIGTERM to every descendant and the command, which a lockchaos run
// takes as its Ctrl-C, then SIGKILL after 30 s.
func treeCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error {
		for _, pid := range descendantPids(cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		return cmd.Process.Signal(syscall.SIGTERM)
	}
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// descendantPids lists pid's descendants, from /proc (none elsewhere).
func descendantPids(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
