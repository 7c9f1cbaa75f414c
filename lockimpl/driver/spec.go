package driver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/lockchaos/lockchaos/lockimpl"
)

// Spec is a lock file (docs/driver-protocol.md, "A lock file"), or the
// spec of --lock exec:<command>.
type Spec struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Command     []string          `yaml:"command"`
	Dir         string            `yaml:"dir"`
	Env         map[string]string `yaml:"env"`
	Options     map[string]string `yaml:"options"`
	// The static part: what hello says, so the lock is placed without
	// starting it. Capabilities nil: not static.
	Library      string    `yaml:"library"`
	Language     string    `yaml:"language"`
	Capabilities *[]string `yaml:"capabilities"`
	// Extensions are the optional requests its hello declares
	// (block_loop), so that a fault that needs one is refused before the
	// run; nil: not said.
	Extensions []string `yaml:"extensions"`
	// APIs are the library's idioms its hello offers (the lock option
	// api), the default first; nil: not said.
	APIs []string `yaml:"apis"`

	// File is the lock file's path ("" for exec:); base is the folder
	// Dir and the command are relative to.
	File string `yaml:"-"`
	base string
}

// LoadSpec reads a lock file.
func LoadSpec(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	var s Spec
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	s.File, s.base = abs, filepath.Dir(abs)
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, " \t\n/:"):
		return nil, fmt.Errorf("lock file %s: name %q: empty or containing a space, slash or colon", path, s.Name)
	case len(s.Command) == 0 || s.Command[0] == "":
		return nil, fmt.Errorf("lock file %s: command: empty", path)
	}
	if s.Capabilities != nil {
		if _, err := infoOf(s.Name, *s.Capabilities); err != nil {
			return nil, fmt.Errorf("lock file %s: %w", path, err)
		}
	}
	return &s, nil
}

// ExecSpec is the spec of --lock exec:<command> (words split on spaces),
// run in the working directory.
func ExecSpec(command string) (*Spec, error) {
	words := strings.Fields(command)
	if len(words) == 0 {
		return nil, fmt.Errorf("--lock exec: no command")
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return &Spec{Command: words, base: wd}, nil
}

// dir is the driver's working directory.
func (s *Spec) dir() string {
	if filepath.IsAbs(s.Dir) {
		return s.Dir
	}
	return filepath.Join(s.base, s.Dir)
}

// argv is the command with its program found: a path (with a slash) is
// relative to the working directory, a bare name is looked up in it and
// then on PATH.
func (s *Spec) argv() ([]string, error) {
	argv := slices.Clone(s.Command)
	p := argv[0]
	switch {
	case filepath.IsAbs(p):
	case strings.ContainsRune(p, '/'):
		argv[0] = filepath.Join(s.dir(), p)
	default:
		if st, err := os.Stat(filepath.Join(s.dir(), p)); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			argv[0] = filepath.Join(s.dir(), p)
		} else if lp, err := exec.LookPath(p); err == nil {
			argv[0] = lp
		} else {
			return nil, fmt.Errorf("command %q: not in %s nor on PATH", p, s.dir())
		}
	}
	return argv, nil
}

// infoOf maps a hello's capabilities to a lockimpl.Info of kind User.
func infoOf(name string, caps []string) (lockimpl.Info, error) {
	info := lockimpl.Info{Name: name, Kind: lockimpl.User}
	for _, c := range caps {
		switch c {
		case "reentrant":
			info.Reentrant = true
		case "renews":
			info.Renews = true
		case "fenced":
			info.Fenced = true
		case "multi-node":
			info.MinNodes = 1
		case "needs-replicas":
			info.NeedsReplicas = true
		case "no-cluster":
			info.NoCluster = "its driver declares no-cluster"
		default:
			return info, fmt.Errorf("capability %q: not one of %s", c, strings.Join(knownCapabilities, ", "))
		}
	}
	return info, nil
}

// sameCaps: two capability lists name the same set.
func sameCaps(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

var (
	regMu sync.Mutex
	// specs are the driver locks registered, by name.
	specs = map[string]*Spec{}
)

// Register makes the driver of s a lock by name (kind user), with the
// capabilities of s's static part or, without one, of its hello (the
// driver is started once for it). A name registered already by the same
// lock file is no error.
func Register(s *Spec) (string, error) {
	name := s.Name
	var caps []string
	if s.Capabilities != nil {
		caps = *s.Capabilities
	} else {
		h, err := Probe(s)
		if err != nil {
			return "", err
		}
		if name == "" {
			name = h.Name
		}
		caps = h.Capabilities
		s.Library, s.Language, s.Extensions, s.APIs = h.Library, h.Language, h.Extensions, h.APIs
		cs := slices.Clone(caps)
		s.Capabilities = &cs
	}
	if name == "" || strings.ContainsAny(name, " \t\n/:") {
		return "", fmt.Errorf("driver %s: name %q: empty or containing a space, slash or colon", s.label(), name)
	}
	s.Name = name
	regMu.Lock()
	defer regMu.Unlock()
	if old, ok := specs[name]; ok {
		if old.File == s.File && slices.Equal(old.Command, s.Command) {
			return name, nil
		}
		return "", fmt.Errorf("driver lock %s: named by both %s and %s", name, old.label(), s.label())
	}
	if _, _, err := lockimpl.Lookup(name); err == nil {
		return "", fmt.Errorf("driver %s: name %s is a built-in lock's", s.label(), name)
	}
	info, err := infoOf(name, caps)
	if err != nil {
		return "", fmt.Errorf("driver %s: %w", s.label(), err)
	}
	info.Description = s.Description
	if info.Description == "" {
		info.Description = "driver: " + strings.Join(s.Command, " ")
	}
	if s.Library != "" {
		info.Description += " (" + strings.Trim(s.Language+" "+s.Library, " ") + ")"
	}
	spec := *s
	lockimpl.RegisterProcess(info, func(env lockimpl.Env) (lockimpl.Locker, error) { return New(&spec, env) }, &spec)
	specs[name] = &spec
	return name, nil
}

// OwnTraffic: a driver's lock sends its own commands (renewals) from its
// process, past the client's gate (lockimpl.ProcessNeeds).
func (s *Spec) OwnTraffic() bool { return true }

// ClockPreload is libfaketime, which the driver processes start under for
// the client clock faults (lockimpl.ProcessNeeds).
func (s *Spec) ClockPreload() (string, error) { return FindFaketime() }

// BlockLoop is nil for a lock file that declares the block_loop extension
// and for a driver known by its hello only (exec:, left to the fault, which
// records it as not taken effect), an error otherwise (lockimpl.ProcessNeeds).
func (s *Spec) BlockLoop() error {
	if s.Capabilities != nil && !slices.Contains(s.Extensions, "block_loop") {
		return fmt.Errorf("its lock file %s declares extensions %v, not block_loop: only the Node drivers block their event loop", s.label(), s.Extensions)
	}
	return nil
}

// TasksPerProcess is the tasks option of the scenario's extra, else of the
// lock file's options (lockimpl.ProcessNeeds).
func (s *Spec) TasksPerProcess(extra map[string]string) (int, error) {
	if _, ok := extra[TasksOption]; ok {
		return Tasks(extra)
	}
	return Tasks(s.Options)
}

// Extension is nil for a lock file that declares extension x and for a
// driver known by its hello only (exec:, left to the fault, which records
// it as not taken effect), an error otherwise (lockimpl.ProcessNeeds).
func (s *Spec) Extension(x string) error {
	if s.Capabilities != nil && !slices.Contains(s.Extensions, x) {
		return fmt.Errorf("its lock file %s declares extensions %v, not %s", s.label(), s.Extensions, x)
	}
	return nil
}

// APIModes are the idioms the lock file says its driver offers, the
// default first (lockimpl.ProcessNeeds).
func (s *Spec) APIModes() []string { return slices.Clone(s.APIs) }

// Cancel is nil for a lock file that declares the cancel extension and for
// a driver known by its hello only (exec:, left to the fault, which records
// it as not taken effect), an error otherwise (lockimpl.ProcessNeeds).
func (s *Spec) Cancel() error {
	if s.Capabilities != nil && !slices.Contains(s.Extensions, "cancel") {
		return fmt.Errorf("its lock file %s declares extensions %v, not cancel: the protocol cannot cancel its calls", s.label(), s.Extensions)
	}
	return nil
}

// label names a spec in errors: its lock file, or its command.
func (s *Spec) label() string {
	if s.File != "" {
		return s.File
	}
	return "exec:" + strings.Join(s.Command, " ")
}

// Label names the driver: its lock file, or its command.
func (s *Spec) Label() string { return s.label() }

// Lookup returns the spec of a registered driver lock.
func Lookup(name string) (*Spec, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	s, ok := specs[name]
	return s, ok
}

// Resolve turns a --lock value into a registered lock's name: a registered
// name stays; exec:<command> and a lock file's path (ending .yaml or .yml,
// or naming a file) register their driver.
func Resolve(v string) (string, error) {
	if _, _, err := lockimpl.Lookup(v); err == nil {
		return v, nil
	}
	if cmd, ok := strings.CutPrefix(v, "exec:"); ok {
		s, err := ExecSpec(cmd)
		if err != nil {
			return "", err
		}
		return Register(s)
	}
	if strings.HasSuffix(v, ".yaml") || strings.HasSuffix(v, ".yml") || strings.ContainsRune(v, '/') {
		s, err := LoadSpec(v)
		if err != nil {
			return "", err
		}
		return Register(s)
	}
	_, _, err := lockimpl.Lookup(v)
	return "", err
}

// Discover registers the shipped driver locks: every drivers/<lang>/*.yaml
// in the folders of LOCKCHAOS_DRIVERS (":"-separated), else in the first
// drivers folder from the working directory upward, or beside the
// executable. Each must carry the static part (capabilities). It returns
// the names registered and what was refused (one error per lock file).
func Discover() ([]string, error) {
	var names []string
	var errs []error
	for _, root := range driverRoots() {
		files, _ := filepath.Glob(filepath.Join(root, "*", "*.yaml"))
		more, _ := filepath.Glob(filepath.Join(root, "*", "*.yml"))
		for _, f := range append(files, more...) {
			s, err := LoadSpec(f)
			if err == nil && s.Capabilities == nil {
				err = fmt.Errorf("lock file %s: a shipped driver's lock file carries its capabilities (the static part)", f)
			}
			if err == nil {
				var n string
				if n, err = Register(s); err == nil {
					names = append(names, n)
				}
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return names, errors.Join(errs...)
}

// driverRoots are the folders Discover reads.
func driverRoots() []string {
	if v := os.Getenv("LOCKCHAOS_DRIVERS"); v != "" {
		return filepath.SplitList(v)
	}
	isDir := func(p string) bool { st, err := os.Stat(p); return err == nil && st.IsDir() }
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if isDir(filepath.Join(d, "drivers")) {
				return []string{filepath.Join(d, "drivers")}
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if d := filepath.Join(filepath.Dir(exe), "drivers"); isDir(d) {
			return []string{d}
		}
	}
	return nil
}
