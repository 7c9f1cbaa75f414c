package campaign

import (
	"bufio"
	"context"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Cells are packed by their CPU appetite: most catalog cells run three or
// four clients that hold and think for milliseconds, and spend their wall
// time in the scenario's own duration and recovery window with a core
// mostly idle (gc-pause: 0.7 CPU-seconds in a 3.4 s run; failover 2 in 21.6;
// restart-empty 0.3 in 5.6). A few are benchmarks in disguise (contention,
// hot-keys, smoke: clients that neither hold nor think) and take every core
// they get (contention: 2.3 CPU-seconds in 2.5 s); no timing cell runs beside
// them, so none sees a machine their clients saturate. They run beside each
// other, up to two a core: a busy cell's workload lasts its scenario's
// duration however many cores it gets (four side by side on two cores take
// the time of one, each with about a quarter of the cycles; their verdicts
// do not rest on how many: the catalog on one seed took 284 s with one a
// core, 235 s with two, every cell as expected). A card's bench and margins keep the machine to
// themselves (appetiteExclusive).

// autoParallel is MatrixOptions.Parallel's default for the backend.
func autoParallel(o runner.Setup) int {
	b, err := cluster.ResolvedBackend(cluster.Spec{Backend: o.Backend, RedisServer: o.RedisServer, Topology: cluster.Single})
	if err == nil && b == cluster.Process {
		return 8 * runtime.NumCPU()
	}
	return 1
}

// appetiteAlone is the appetite from which a cell is busy: it runs with
// no timing cell beside it.
const appetiteAlone = 0.5

// appetiteExclusive is a step that runs with nothing beside it but tails.
const appetiteExclusive = math.MaxFloat64

// cellAppetite estimates the cores a scenario's cell keeps busy: a base for
// starting the servers, the check and the report, a share for each server
// process (0.01 core: failover's six, with their start, used 2 CPU-seconds
// in a 21.6 s cell), and each client's cycles (about 0.15 ms of CPU each,
// client and server side) over the cycle's hold and think.
func cellAppetite(s *scenarios.Scenario) float64 {
	nodes := s.Nodes
	switch s.Topology {
	case "single":
		nodes = 1
	case "sentinel":
		nodes = 6 // a master, two replicas, three sentinels
	case "cluster":
		nodes = max(nodes, 6)
	}
	w := s.Workload
	a := 0.1 + 0.01*float64(nodes)
	perCycle := 0.15e-3 // seconds of CPU a cycle costs
	if w.Mode == "open" && w.Rate > 0 {
		return a + w.Rate*perCycle
	}
	idle := (w.Hold.Min+w.Hold.Max+w.Think.Min+w.Think.Max).Seconds()/2 + 0.5e-3
	return a + float64(max(w.Clients, 1))*min(1, perCycle/idle)
}

// scheduler admits cells while the machine has room: at most max at once,
// their appetites within budget cores, a busy cell (appetite ≥
// appetiteAlone) only beside busy cells (at most busyMax of them) and cells
// in their tails, an exclusive step beside tails only, and (where /proc/stat
// can be read) not
// while the machine's CPU was busier than busyLimit over the last interval,
// whoever was busy.
//
// A cell's tail is what follows its clients' end (stopping the servers,
// the check, the report): a busy cell keeps the machine to itself only
// while its clients run, and its tail counts as tailAppetite (the check is
// one goroutine), so the next busy cell's workload overlaps it.
type scheduler struct {
	max       int
	budget    float64
	busyLimit float64
	busyMax   int

	mu      sync.Mutex
	cond    *sync.Cond
	running int     // cells admitted and not released
	tails   int     // of those, in their tails
	used    float64 // their appetites
	alone   int     // busy cells and exclusive steps whose clients run
	excl    int     // of those, exclusive steps (0 or 1)
	load    *cpuLoad
}

// tailAppetite is a busy cell's appetite once its clients ended.
const tailAppetite = 1.0

func newScheduler(parallel int) *scheduler {
	cpus := float64(runtime.NumCPU())
	s := &scheduler{max: parallel, budget: 0.75 * cpus, busyLimit: 0.85, busyMax: max(1, 2*runtime.NumCPU()), load: newCPULoad()}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// slot is one admitted cell.
type slot struct {
	s        *scheduler
	appetite float64
	alone    bool
	excl     bool
	tail     bool
	released bool
}

// acquire waits for room for a cell of appetite a; it returns the cell's
// slot, or nil when ctx ended first.
func (s *scheduler) acquire(ctx context.Context, a float64) *slot {
	alone := a >= appetiteAlone || s.max == 1
	excl := a == appetiteExclusive || s.max == 1
	stop := context.AfterFunc(ctx, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if ctx.Err() != nil {
			return nil
		}
		var room bool
		switch {
		case excl:
			// Only tails beside it (at --parallel 1, nothing).
			room = s.alone == 0 && s.running == s.tails && (s.max > 1 || s.running == 0)
		case alone:
			// Only busy cells and tails beside it.
			room = s.excl == 0 && s.alone < s.busyMax && s.running < s.max && s.running == s.tails+s.alone
		default:
			room = s.alone == 0 && s.running < s.max && s.used+a <= s.budget
		}
		switch {
		case s.running == 0 || room && !s.busy():
			if excl {
				a = 0 // the machine's, counted as nobody's appetite
			}
			s.running++
			s.used += a
			if alone {
				s.alone++
			}
			if excl {
				s.excl++
			}
			return &slot{s: s, appetite: a, alone: alone, excl: excl}
		case room:
			// Room but a busy machine: look again shortly.
			s.mu.Unlock()
			time.Sleep(200 * time.Millisecond)
			s.mu.Lock()
		default:
			s.cond.Wait()
		}
	}
}

// clientsDone marks the cell's tail: a busy cell no longer keeps the
// machine to itself. At --parallel 1 nothing changes.
func (sl *slot) clientsDone() {
	s := sl.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl.tail || sl.released || s.max == 1 {
		return
	}
	sl.tail = true
	s.tails++
	if sl.alone {
		s.alone--
		if sl.excl {
			s.excl--
		}
		s.used += tailAppetite - sl.appetite
		sl.appetite = tailAppetite
	}
	s.cond.Broadcast()
}

// release ends the cell.
func (sl *slot) release() {
	s := sl.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl.released {
		return
	}
	sl.released = true
	s.running--
	s.used -= sl.appetite
	if sl.tail {
		s.tails--
	} else if sl.alone {
		s.alone--
		if sl.excl {
			s.excl--
		}
	}
	if s.running == 0 {
		s.used = 0
	}
	s.cond.Broadcast()
}

// busy reports whether the CPU was busier than busyLimit since the last
// look (at least 150 ms ago; sooner looks reuse the last answer).
func (s *scheduler) busy() bool {
	if s.load == nil {
		return false
	}
	return s.load.busy() > s.busyLimit
}

// cpuLoad is the machine's busy fraction from /proc/stat.
type cpuLoad struct {
	lastAt          time.Time
	lastBusy, lastT uint64
	frac            float64
}

func newCPULoad() *cpuLoad {
	busy, total, ok := readProcStat()
	if !ok {
		return nil
	}
	return &cpuLoad{lastAt: time.Now(), lastBusy: busy, lastT: total}
}

func (l *cpuLoad) busy() float64 {
	if time.Since(l.lastAt) < 150*time.Millisecond {
		return l.frac
	}
	busy, total, ok := readProcStat()
	if !ok || total <= l.lastT {
		return l.frac
	}
	l.frac = float64(busy-l.lastBusy) / float64(total-l.lastT)
	l.lastAt, l.lastBusy, l.lastT = time.Now(), busy, total
	return l.frac
}

// readProcStat reads the first line of /proc/stat: jiffies busy and in all.
func readProcStat() (busy, total uint64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "cpu ") {
		return 0, 0, false
	}
	for i, field := range strings.Fields(line)[1:] {
		v, err := strconv.ParseUint(field, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, true
}

// orderJobs puts the cells that run alone first (they drain the machine,
// so once, together), then the rest longest first, so the long cells do not
// end the matrix alone. Stable: equal cells keep the catalog's order.
func orderJobs[J any](jobs []J, scen func(J) *scenarios.Scenario) {
	sort.SliceStable(jobs, func(a, b int) bool {
		sa, sb := scen(jobs[a]), scen(jobs[b])
		aa, ab := cellAppetite(sa) >= appetiteAlone, cellAppetite(sb) >= appetiteAlone
		if aa != ab {
			return aa
		}
		return cellCost(sa) > cellCost(sb)
	})
}
