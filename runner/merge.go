package runner

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/report/metrics"
)

// MergeOptions name the workers' run directories and where the merged run
// goes.
type MergeOptions struct {
	Dirs []string
	Out  string
	Eval EvalOptions
	// Wait, when set, waits up to this long for every directory to hold
	// its worker.json (a worker writes it last): the merge Job of
	// lockchaos k8s starts with the workers.
	Wait time.Duration
}

// Merge joins the run directories of a run's workers (Worker) into one run
// directory that check and report accept, and checks it. Every time is
// mapped onto the server's clock through each worker's measured offset
// (interpolated between its start and end samples) and made relative to
// the earliest worker's start; the merged run event records each worker's
// offset and error bound, and every client's uncertainty
// (history.MetaClockUncertainty), which the checker respects: an overlap
// shorter than two clients' combined uncertainty is unknown evidence, never
// invalid. Each worker's events keep their order, so every client's events
// stay in program order. Server events and phases are the coordinator's
// (worker 0, the only one that observes). Histograms and throughput come
// from the merged events, so they cover every client exactly.
func Merge(o MergeOptions) (*metrics.Results, Class, error) {
	infos, byIndex, err := readWorkers(o)
	if err != nil {
		return nil, ClassOf(err), err
	}
	if err := PrepareDir(o.Out); err != nil {
		return nil, BadInput, badField("out", "%s: %w", o.Out, err)
	}
	streams, t0, notes, err := readStreams(o.Dirs, infos, byIndex)
	if err != nil {
		return nil, BadInput, err
	}
	meta, metaNotes := mergedMeta(streams, t0)
	notes = append(notes, metaNotes...)
	if err := writeMerged(filepath.Join(o.Out, history.CompactFile), meta, streams, t0); err != nil {
		return nil, Infra, err
	}
	b, err := os.ReadFile(filepath.Join(o.Dirs[byIndex[0]], "scenario.yaml"))
	if err != nil {
		return nil, BadInput, fail(BadInput, "%w", err)
	}
	if err := os.WriteFile(filepath.Join(o.Out, "scenario.yaml"), b, 0o644); err != nil {
		return nil, Infra, fail(Infra, "%w", err)
	}
	eo := o.Eval
	eo.Notes = append(append([]string{fmt.Sprintf("merged from %d workers of run %s", len(streams), infos[0].RunID)}, notes...), eo.Notes...)
	return CheckDir(o.Out, eo)
}

// readWorkers reads the workers' worker.json (waiting for them up to
// o.Wait) and refuses directories that are not the workers of one run. It
// returns the infos in o.Dirs's order and, by worker index, their position.
func readWorkers(o MergeOptions) ([]WorkerInfo, []int, error) {
	if len(o.Dirs) == 0 {
		return nil, nil, fail(BadInput, "no worker directory to merge")
	}
	if o.Out == "" {
		return nil, nil, badField("out", "merge needs the merged run's directory")
	}
	if o.Wait > 0 {
		deadline := time.Now().Add(o.Wait)
		for _, d := range o.Dirs {
			for {
				if _, err := os.Stat(filepath.Join(d, WorkerFile)); err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Second)
			}
		}
	}
	infos := make([]WorkerInfo, len(o.Dirs))
	for i, d := range o.Dirs {
		wi, err := ReadWorkerInfo(d)
		if err != nil {
			return nil, nil, fail(BadInput, "%w", err)
		}
		infos[i] = wi
	}
	if err := sameRun(o.Dirs, infos); err != nil {
		return nil, nil, err
	}
	byIndex := make([]int, infos[0].Count) // index → position in Dirs
	for i, wi := range infos {
		byIndex[wi.Index] = i
	}
	return infos, byIndex, nil
}

// stream is one worker's events, merged from next on.
type stream struct {
	wi     WorkerInfo
	events []history.Event
	next   int
}

// readStreams reads every worker's history, in worker order, and finds the
// earliest worker's start on the server's clock (t0).
func readStreams(dirs []string, infos []WorkerInfo, byIndex []int) ([]*stream, int64, []string, error) {
	streams := make([]*stream, len(infos))
	var notes []string
	t0 := int64(0)
	for pos, idx := range byIndex {
		dir := dirs[idx]
		ev, info, err := history.ReadFile(history.FileIn(dir))
		if err != nil {
			return nil, 0, nil, fail(BadInput, "%s: %w", dir, err)
		}
		if len(ev) == 0 || ev[0].Op != history.OpRun {
			return nil, 0, nil, fail(BadInput, "%s: the history does not start with its run event", dir)
		}
		if info.Torn {
			notes = append(notes, fmt.Sprintf("worker %d's history ended in a torn line (skipped)", pos))
		}
		st := &stream{wi: infos[idx], events: ev}
		streams[pos] = st
		if s0 := st.wi.ServerNS(0); pos == 0 || s0 < t0 {
			t0 = s0
		}
	}
	return streams, t0, notes, nil
}

// mergedMeta is the merged run event's: the coordinator's, with every
// worker's clock.
func mergedMeta(streams []*stream, t0 int64) (map[string]any, []string) {
	meta := maps.Clone(streams[0].events[0].Meta)
	delete(meta, history.MetaWorker)
	meta[history.MetaStartNS] = t0
	unc, clientWorker := map[string]any{}, map[string]any{}
	var workers []map[string]any
	var scheduled []any
	var notes []string
	for _, st := range streams {
		wi := st.wi
		u := wi.Uncertainty()
		for _, c := range wi.Clients {
			unc[strconv.Itoa(c)] = u
			clientWorker[strconv.Itoa(c)] = wi.Index
		}
		workers = append(workers, map[string]any{"index": wi.Index, "clients": wi.Clients,
			"offset_start_ns": wi.Start.OffsetNS, "offset_end_ns": wi.End.OffsetNS,
			"error_start_ns": wi.Start.ErrorNS, "error_end_ns": wi.End.ErrorNS, "uncertainty_ns": u})
		if s, ok := st.events[0].Meta[history.MetaFaultsScheduled].([]any); ok {
			scheduled = append(scheduled, s...)
		}
		notes = append(notes, fmt.Sprintf("worker %d (clients %v): clock offset to the server %+.3f ms at the start, %+.3f ms at the end; times carry ±%.3f ms",
			wi.Index, wi.Clients, history.MS(wi.Start.OffsetNS), history.MS(wi.End.OffsetNS), history.MS(u)))
	}
	meta[history.MetaWorkers] = workers
	meta[history.MetaClockUncertainty] = unc
	meta[history.MetaClientWorker] = clientWorker
	meta[history.MetaFaultsScheduled] = scheduled
	if r, _ := meta[history.MetaResource].(string); r == "register" {
		notes = append(notes, "each worker's fenced register is its own: a stale fence is refused only by the register of the worker that holds it")
	}
	return meta, notes
}

// writeMerged writes the merged history: the run event, then every
// worker's events on the merged clock, interleaved.
func writeMerged(path string, meta map[string]any, streams []*stream, t0 int64) error {
	hw, err := history.Create(path)
	if err != nil {
		return fail(Infra, "%w", err)
	}
	hw.Append(&history.Event{T: 0, Client: -1, Op: history.OpRun, Meta: meta})
	for _, st := range streams {
		st.toServerClock(t0)
	}
	// Interleave by when each event was written (its end, else its start),
	// keeping each worker's own order.
	at := func(e *history.Event) int64 {
		if e.End > 0 {
			return e.End
		}
		return e.T
	}
	for {
		var best *stream
		for _, st := range streams {
			if st.next < len(st.events) && (best == nil || at(&st.events[st.next]) < at(&best.events[best.next])) {
				best = st
			}
		}
		if best == nil {
			break
		}
		hw.Append(&best.events[best.next])
		best.next++
	}
	if err := hw.Close(); err != nil {
		return fail(Infra, "history: %w", err)
	}
	return nil
}

// toServerClock maps each event onto the merged clock, leaving out what
// only one worker should say (the run event, the others' phases).
func (st *stream) toServerClock(t0 int64) {
	kept := st.events[:0]
	for _, e := range st.events {
		if e.Op == history.OpRun || (e.Op == history.OpPhase && st.wi.Index != 0) {
			continue
		}
		e.T = st.wi.ServerNS(e.T) - t0
		if e.End > 0 {
			e.End = st.wi.ServerNS(e.End) - t0
		}
		if e.Deadline > 0 {
			e.Deadline = st.wi.ServerNS(e.Deadline) - t0
		}
		kept = append(kept, e)
	}
	st.events = kept
}

// sameRun refuses directories of different runs, scenarios, locks or seeds,
// and a set of workers with one missing or twice.
func sameRun(dirs []string, infos []WorkerInfo) error {
	first := infos[0]
	for i, wi := range infos[1:] {
		for _, f := range []struct{ name, a, b string }{
			{"run id", first.RunID, wi.RunID}, {"scenario", first.Scenario, wi.Scenario}, {"lock", first.Lock, wi.Lock},
			{"seed", strconv.FormatUint(first.Seed, 10), strconv.FormatUint(wi.Seed, 10)},
			{"workers", strconv.Itoa(first.Count), strconv.Itoa(wi.Count)},
		} {
			if f.a != f.b {
				return fail(BadInput, "%s has %s %s, %s has %s %s: not workers of one run", dirs[0], f.name, f.a, dirs[i+1], f.name, f.b)
			}
		}
	}
	seen := map[int]string{}
	for i, wi := range infos {
		if wi.Index < 0 || wi.Index >= first.Count {
			return fail(BadInput, "%s: worker index %d is not in 0..%d", dirs[i], wi.Index, first.Count-1)
		}
		if d, ok := seen[wi.Index]; ok {
			return fail(BadInput, "%s and %s are both worker %d", d, dirs[i], wi.Index)
		}
		seen[wi.Index] = dirs[i]
	}
	var missing []string
	for i := range first.Count {
		if _, ok := seen[i]; !ok {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		return fail(BadInput, "run %s had %d workers; missing worker %s", first.RunID, first.Count, strings.Join(missing, ", "))
	}
	return nil
}
