package lockimpl

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Kind classifies a registered lock.
type Kind string

const (
	Correct Kind = "correct" // correct as far as its design goes
	Broken  Kind = "broken"  // a classic mistake, kept as a control the checker must catch
	Control Kind = "control" // an unusual but correct variant the checker must not flag
	Adapter Kind = "adapter" // a third-party library behind the Locker API
	User    Kind = "user"    // registered by a user's program
)

// Info describes a registered lock.
type Info struct {
	Name        string
	Kind        Kind
	Description string // one line
	// Mistake, for broken controls, says what goes wrong and when.
	Mistake string
	// Reentrant: the same owner may acquire a held key again.
	Reentrant bool
	// Fenced: leases carry fencing tokens.
	Fenced bool
	// MinNodes is how many independent masters it needs (redlock: 1 or more;
	// 0 means it uses the first connection only).
	MinNodes int
	// Renews: leases are kept alive in the background. Such a lock must
	// report each renewal attempt through Env.Note (Renewal does): a run in
	// which it held longer than two renewal intervals without one note is
	// flagged in the results.
	Renews bool
	// NeedsReplicas: the lock waits for replicas to acknowledge (WAIT), so
	// it runs only in topologies with replicas (sentinel, cluster).
	NeedsReplicas bool
	// NoCluster, when set, says why the lock cannot run on a Redis
	// Cluster (e.g. one script touching keys of several slots, or a
	// library without cluster support); the matrix marks its cluster
	// cells not applicable with this reason, and a run refuses it.
	NoCluster string
	// Module, for an adapter, is the Go module of the library behind it
	// (e.g. "github.com/redis/rueidis"): its labels take the version from
	// the binary's build info (ModuleVersion), never from a source file.
	Module string
}

// Capabilities are an Info's declarations that decide which scenarios and
// which checks apply to a lock, e.g. "reentrant, renews" ("plain" for none).
func (i Info) Capabilities() string {
	var cs []string
	for _, c := range []struct {
		on   bool
		name string
	}{{i.Reentrant, "reentrant"}, {i.Fenced, "fenced"}, {i.Renews, "renews"}, {i.NeedsReplicas, "needs-replicas"}, {i.MinNodes > 0, "multi-node"}, {i.NoCluster != "", "no-cluster"}} {
		if c.on {
			cs = append(cs, c.name)
		}
	}
	if len(cs) == 0 {
		return "plain"
	}
	return strings.Join(cs, ", ")
}

// check reports the first declaration that cannot hold.
func (i Info) check() error {
	switch {
	case i.Name == "" || strings.ContainsAny(i.Name, " \t\n/"):
		return fmt.Errorf("name %q: empty or containing a space or slash", i.Name)
	case i.Kind != Correct && i.Kind != Broken && i.Kind != Control && i.Kind != Adapter && i.Kind != User:
		return fmt.Errorf("lock %s: kind %q is not one of correct, broken, control, adapter, user", i.Name, i.Kind)
	case i.Kind == Broken && i.Mistake == "":
		return fmt.Errorf("lock %s: a broken control must say its Mistake", i.Name)
	case i.MinNodes < 0:
		return fmt.Errorf("lock %s: MinNodes %d is negative", i.Name, i.MinNodes)
	case i.NeedsReplicas && i.MinNodes > 0:
		return fmt.Errorf("lock %s: NeedsReplicas (replicated masters) and MinNodes %d (independent masters) exclude each other", i.Name, i.MinNodes)
	}
	return nil
}

// Factory builds one client's Locker.
type Factory func(env Env) (Locker, error)

type entry struct {
	info    Info
	factory Factory
	needs   ProcessNeeds // nil: the lock runs in the harness's process
}

var (
	regMu    sync.RWMutex
	registry = map[string]entry{}
)

// Register makes a lock available by name. It panics on a duplicate name, a
// nil factory or an Info whose declarations contradict each other, since
// that is a programming error at init time. An empty Kind means User.
func Register(info Info, f Factory) { register(info, f, nil) }

// RegisterProcess is Register for a lock whose clients each run in a
// process of their own (a driver lock): p says what that process needs of
// a run (ProcessNeedsOf).
func RegisterProcess(info Info, f Factory, p ProcessNeeds) {
	if p == nil {
		panic("lockimpl.RegisterProcess: nil process for " + info.Name)
	}
	register(info, f, p)
}

func register(info Info, f Factory, p ProcessNeeds) {
	if info.Kind == "" {
		info.Kind = User
	}
	if err := info.check(); err != nil {
		panic("lockimpl.Register: " + err.Error())
	}
	if f == nil {
		panic("lockimpl.Register: nil factory for " + info.Name)
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[info.Name]; dup {
		panic("lockimpl.Register: duplicate lock " + info.Name)
	}
	registry[info.Name] = entry{info, f, p}
}

// ProcessNeedsOf returns what the process of lock name's clients needs of a run,
// when the lock runs in processes of its own (RegisterProcess).
func ProcessNeedsOf(name string) (ProcessNeeds, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	e, ok := registry[name]
	return e.needs, ok && e.needs != nil
}

// Lookup returns the lock registered under name.
func Lookup(name string) (Info, Factory, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	e, ok := registry[name]
	if !ok {
		return Info{}, nil, fmt.Errorf("unknown lock %q (known: %v)", name, namesLocked())
	}
	return e.info, e.factory, nil
}

// List returns every registered lock, sorted by kind then name.
func List() []Info {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Info, 0, len(registry))
	for _, e := range registry {
		out = append(out, e.info)
	}
	order := map[Kind]int{Correct: 0, Control: 1, Broken: 2, Adapter: 3, User: 4}
	sort.Slice(out, func(i, j int) bool {
		if order[out[i].Kind] != order[out[j].Kind] {
			return order[out[i].Kind] < order[out[j].Kind]
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Names returns the registered names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New builds a Locker by name, filling option defaults and validating them.
func New(name string, env Env) (Locker, error) {
	info, f, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	env.Options = env.Options.WithDefaults()
	if err := env.Options.Validate(); err != nil {
		return nil, err
	}
	if env.Clock == nil {
		env.Clock = RealClock{}
	}
	if len(env.Conns) == 0 {
		return nil, fmt.Errorf("lock %s: no Redis connection in Env", name)
	}
	if info.MinNodes > len(env.Conns) {
		return nil, fmt.Errorf("lock %s: needs %d nodes, topology has %d", name, info.MinNodes, len(env.Conns))
	}
	lk, err := f(env)
	if err != nil {
		return nil, err
	}
	// Reentrancy is declared once, in Info: the workload re-enters only
	// locks that declare it, so a Locker that says otherwise would have its
	// reentrancy go untested (or be re-entered without support).
	if r, ok := lk.(Reentrant); ok && r.Reentrant() != info.Reentrant {
		_ = lk.Close()
		return nil, fmt.Errorf("lock %s: its Locker's Reentrant() is %v but Info.Reentrant is %v; declare it in Info", name, r.Reentrant(), info.Reentrant)
	}
	return lk, nil
}
