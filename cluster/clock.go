package cluster

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// A real per-process server clock. A redis-server keeps key expiry as an
// absolute time on its own wall clock and answers TIME from it; to give one
// server a wrong clock (and leave the host's alone) the process backend
// preloads a small shim (clockshim/shim.c) that adds an offset, growing at a
// rate, to the wall-clock calls the server makes. The offset and rate live in
// a per-node clock file the shim maps shared, so the harness changes them
// while the server runs. Debian's libfaketime fails under its redis-server
// (recursion), hence our own shim, built from source with gcc at run time.

//go:embed clockshim/shim.c
var shimSource []byte

// ClockEnv names the clock file in the server's environment (the shim
// reads it); NoRealClockEnv=off (or 0, false) disables the shim, so that
// clock faults fall back to rewriting TTLs.
const (
	ClockEnv       = "LOCKCHAOS_CLOCK_FILE"
	NoRealClockEnv = "LOCKCHAOS_REAL_CLOCK"
)

// clockFileSize is the clock file's layout size (see shim.c): seq, offset,
// t0, rate, 8 bytes each.
const clockFileSize = 32

var (
	shimMu    sync.Mutex
	shimBuilt = map[string]string{} // cache dir -> built shim path
)

// BuildShim compiles the clock shim with gcc into the cache dir (the user's
// cache, else the temp dir), named by the source's hash, and returns its
// path. A shim already there is reused; a new one is built under a temporary
// name and renamed into place, so that parallel runs never load a partial
// file. It fails when NoRealClockEnv says off or gcc is missing.
func BuildShim() (string, error) {
	switch os.Getenv(NoRealClockEnv) {
	case "off", "0", "false", "no":
		return "", fmt.Errorf("disabled by %s=%s", NoRealClockEnv, os.Getenv(NoRealClockEnv))
	}
	// The user's cache first; the temp dir when it cannot be written
	// (a read-only home).
	var errs []error
	for _, base := range cacheBases() {
		p, err := buildShim(filepath.Join(base, "lockchaos", "clockshim"))
		if err == nil {
			return p, nil
		}
		if errors.Is(err, errNoCompiler) {
			return "", err
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

func cacheBases() []string {
	if base, err := os.UserCacheDir(); err == nil {
		return []string{base, os.TempDir()}
	}
	return []string{os.TempDir()}
}

// errNoCompiler marks a shim that cannot be built anywhere: no gcc.
var errNoCompiler = errors.New("no C compiler")

func buildShim(dir string) (string, error) {
	sum := sha256.Sum256(shimSource)
	path := filepath.Join(dir, "shim-"+hex.EncodeToString(sum[:8])+".so")
	shimMu.Lock()
	defer shimMu.Unlock()
	if p, ok := shimBuilt[dir]; ok {
		return p, nil
	}
	if _, err := os.Stat(path); err == nil {
		shimBuilt[dir] = path
		return path, nil
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	gcc, err := exec.LookPath(cc)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found to build the clock shim: %v", errNoCompiler, cc, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("clock shim cache: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("clock shim cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	src, out := filepath.Join(tmp, "shim.c"), filepath.Join(tmp, "shim.so")
	if err := os.WriteFile(src, shimSource, 0o644); err != nil {
		return "", fmt.Errorf("clock shim source: %w", err)
	}
	cmd := exec.Command(gcc, "-shared", "-fPIC", "-O2", "-o", out, src, "-ldl")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the clock shim (%s): %w: %s", gcc, err, msg)
	}
	if err := os.Rename(out, path); err != nil {
		return "", fmt.Errorf("install the clock shim: %w", err)
	}
	shimBuilt[dir] = path
	return path, nil
}

// ServerClock is one server's clock: host wall clock + Offset(now). Its
// methods are safe for concurrent use; the server reads it at every clock
// call through the shared mapping.
type ServerClock struct {
	path string
	mu   sync.Mutex // one writer at a time (the seqlock allows one)
	mem  []byte
	// changes is every setting written, in order (guarded by mu): the
	// command record reads it to place each change in the node's own
	// order (ClockChange).
	changes []ClockChange
}

// ClockChange is one setting of a server clock, from host time At (unix
// ns) on: the server's clock reads host + Offset + (host - At)×(Rate-1).
type ClockChange struct {
	At     int64
	Offset int64
	Rate   float64
}

// ServerAt is the server's clock (unix ns) at host time h under c.
func (c ClockChange) ServerAt(h int64) int64 { return h + offsetAt(c.Offset, c.At, c.Rate, h) }

// HostAt is the host time (unix ns) at which the server's clock read s
// under c (ServerAt's inverse).
func (c ClockChange) HostAt(s int64) int64 {
	if c.Rate == 1 || c.Rate <= 0 {
		return s - c.Offset
	}
	return int64((float64(s-c.Offset) + float64(c.At)*(c.Rate-1)) / c.Rate)
}

// Changes returns the settings written since the i-th (all: 0).
func (k *ServerClock) Changes(i int) []ClockChange {
	k.mu.Lock()
	defer k.mu.Unlock()
	if i >= len(k.changes) {
		return nil
	}
	return append([]ClockChange(nil), k.changes[i:]...)
}

// newServerClock creates the clock file at path (real time: offset 0, rate
// 1) and maps it. An existing file is reset.
func newServerClock(path string) (*ServerClock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(clockFileSize); err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, clockFileSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map clock file %s: %w", path, err)
	}
	k := &ServerClock{path: path, mem: mem}
	k.write(0, time.Now().UnixNano(), 1)
	return k, nil
}

// Path is the clock file's path.
func (k *ServerClock) Path() string { return k.path }

func (k *ServerClock) word(i int) *uint64 { return (*uint64)(unsafe.Pointer(&k.mem[8*i])) }

// write publishes new fields under the seqlock: the sequence is odd while
// they change, and the shim retries a read that saw it odd or changed.
func (k *ServerClock) write(offset, t0 int64, rate float64) {
	atomic.AddUint64(k.word(0), 1)
	atomic.StoreUint64(k.word(1), uint64(offset))
	atomic.StoreUint64(k.word(2), uint64(t0))
	atomic.StoreUint64(k.word(3), math.Float64bits(rate))
	atomic.AddUint64(k.word(0), 1)
	k.changes = append(k.changes, ClockChange{At: t0, Offset: offset, Rate: rate})
}

func (k *ServerClock) read() (offset, t0 int64, rate float64) {
	return int64(atomic.LoadUint64(k.word(1))), int64(atomic.LoadUint64(k.word(2))), math.Float64frombits(atomic.LoadUint64(k.word(3)))
}

// offsetAt is the shim's formula (shim.c, shift) at host time now (ns).
func offsetAt(offset, t0 int64, rate float64, now int64) int64 {
	if rate == 1 || rate <= 0 {
		return offset
	}
	return offset + int64(float64(now-t0)*(rate-1))
}

// Offset is how far the server's clock is ahead of the host's now (negative:
// behind), and its rate.
func (k *ServerClock) Offset() (time.Duration, float64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mem == nil {
		return 0, 0, errClockClosed
	}
	off, t0, rate := k.read()
	return time.Duration(offsetAt(off, t0, rate, time.Now().UnixNano())), rate, nil
}

// Jump moves the server's clock by d (forward when positive) at once; its
// rate stays. It returns the offset after the jump.
func (k *ServerClock) Jump(d time.Duration) (time.Duration, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mem == nil {
		return 0, errClockClosed
	}
	off, t0, rate := k.read()
	now := time.Now().UnixNano()
	cur := offsetAt(off, t0, rate, now) + int64(d)
	k.write(cur, now, rate)
	return time.Duration(cur), nil
}

// SetRate makes the server's clock run at rate from now on (2 = twice as
// fast as the host's, 1 = real speed) without a jump: the offset reached so
// far is kept. It returns that offset.
func (k *ServerClock) SetRate(rate float64) (time.Duration, error) {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return 0, fmt.Errorf("clock rate %v is not a positive number", rate)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mem == nil {
		return 0, errClockClosed
	}
	off, t0, r := k.read()
	now := time.Now().UnixNano()
	cur := offsetAt(off, t0, r, now)
	k.write(cur, now, rate)
	return time.Duration(cur), nil
}

func (k *ServerClock) close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mem == nil {
		return nil
	}
	err := syscall.Munmap(k.mem)
	k.mem = nil
	if err != nil {
		return fmt.Errorf("unmap clock file: %w", err)
	}
	return nil
}

// errClockClosed is returned by a clock whose cluster was stopped.
var errClockClosed = errors.New("server clock: the cluster was stopped")

// MeasureOffset asks the server behind cl for TIME and returns how far its
// clock is from the host's (positive: ahead), taking the host time halfway
// through the round trip, and the round trip (the measure's uncertainty).
func MeasureOffset(ctx context.Context, cl *redis.Client) (offset, rtt time.Duration, err error) {
	t1 := time.Now()
	st, err := cl.Time(ctx).Result()
	t2 := time.Now()
	if err != nil {
		return 0, 0, fmt.Errorf("TIME: %w", err)
	}
	return st.Sub(t1.Add(t2.Sub(t1) / 2)), t2.Sub(t1), nil
}
