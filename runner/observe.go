package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/keyspace"
)

// observe records the servers' keyspace notifications for the run's keys
// into the history.
func observe(ctx context.Context, cl *cluster.Cluster, rec *history.Recorder, p keyspace.Prefix) (func() error, cluster.Notify, error) {
	none := func() error { return nil }
	if !rec.Enabled() {
		return none, cluster.Notify{}, nil
	}
	stop, st, err := cluster.Observe(ctx, cl, p, rec.Record, rec.Now)
	if err != nil {
		return none, st, err
	}
	return stop, st, nil
}

// recordCommands starts the per-node command record (cluster.Record). A
// record that cannot start is recorded as such (history.CmdUnavailable), so
// the checker falls back to the keyspace observer and says why.
func recordCommands(ctx context.Context, cl *cluster.Cluster, rec *history.Recorder, p keyspace.Prefix, runID string) (func(), cluster.RecordStatus) {
	stop, st, err := cluster.Record(ctx, cl, p, runID, rec.Record, rec.Now, rec.ToRun)
	if err == nil && st.Mode == cluster.RecordMonitor {
		return stop, st
	}
	why := st.Note
	if err != nil {
		why = "command record not running: " + err.Error()
		st = cluster.RecordStatus{Mode: cluster.RecordUnavailable, Note: why}
	}
	rec.Record(&history.Event{T: rec.Now(), Client: -1, Op: history.OpCommand, Detail: history.CmdUnavailable, Err: why})
	return stop, st
}

// preflightShow is how many keys per node the refusal names.
const preflightShow = 5

// Preflight refuses a run whose keys already exist on a server (a user's
// key of the same name, a run that was killed, two runs with one
// key prefix): the run would report that key's life as the lock's, and
// its clean-up would delete it.
func Preflight(ctx context.Context, cl *cluster.Cluster, p keyspace.Prefix) error {
	found, err := cl.FindKeys(ctx, p.Pattern(), preflightShow+1)
	if err != nil {
		return fail(Infra, "preflight: %w", err)
	}
	if len(found) == 0 {
		return nil
	}
	var parts []string
	for node, keys := range found {
		more := ""
		if len(keys) > preflightShow {
			keys, more = keys[:preflightShow], ", ..."
		}
		sort.Strings(keys)
		parts = append(parts, fmt.Sprintf("%s: %s%s", node, strings.Join(keys, ", "), more))
	}
	sort.Strings(parts)
	return badField("key-prefix", "preflight: keys under the run's prefix %q already exist (%s); the run would mistake them for its own: choose another prefix or remove them", string(p), strings.Join(parts, "; "))
}

// CleanUp removes the run's keys (its prefix only) from servers that outlive
// the run: the user's (external) and a shared cluster (bench). Servers the
// run started are discarded with their data. It returns notes.
func CleanUp(ctx context.Context, cl *cluster.Cluster, p keyspace.Prefix, shared bool) []string {
	if cl.Backend != cluster.External && !shared {
		return nil
	}
	// An interrupted run cleans up too.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := cl.DeleteKeys(cctx, p.Pattern()); err != nil {
		return []string{fmt.Sprintf("the run's keys (prefix %q) could not all be removed: %v", string(p), err)}
	}
	return nil
}
