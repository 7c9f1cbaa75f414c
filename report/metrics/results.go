// Package metrics computes a run's numbers from its history and checker
// result and holds the documents that carry them: results.json (Results),
// bench.json, matrix.json and seeds.json, the latency analysis with its
// HdrHistogram distributions (.hgrm), thresholds and the comparison with a
// baseline. It reads and writes files and never draws: rendering (plots,
// Markdown, HTML, text) is package report's, which imports this one, so
// that code that only needs the numbers does not pull in the plotting
// library.
package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/lockchaos/lockchaos/checker"
)

// Results is results.json. The schema is documented in docs/results.md;
// add fields, do not rename them (baselines in users' CI depend on them).
type Results struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Backend  string `json:"backend"`
	// Server is what the servers said they run ("redis 7.4.1"); Image the
	// docker image (backend docker).
	Server   string `json:"server,omitempty"`
	Image    string `json:"image,omitempty"`
	Topology string `json:"topology"`
	Seed     uint64 `json:"seed"`
	// RunID names the run; KeyPrefix is the prefix of every key it created
	// at the server.
	RunID     string `json:"run_id,omitempty"`
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Notifications says how the observer got the servers' keyspace
	// notifications: harness-servers | enabled-for-run (a user's server,
	// set back afterwards) | already-on | config-refused (the unlock check
	// was skipped) | unavailable (embedded).
	Notifications string `json:"keyspace_notifications,omitempty"`
	// CommandRecord says whether the run recorded every node's commands on
	// its keys: monitor | unavailable | off.
	CommandRecord string `json:"command_record,omitempty"`
	// OwnershipSource is what the ownership checks (unlock, reentrancy)
	// read: command-record (exact: who ran each command) or
	// keyspace-observer (the fallback: authors matched by time), with why.
	OwnershipSource string `json:"ownership_source,omitempty"`
	// Verdict is the checker's overall verdict: valid | invalid | unknown.
	Verdict string `json:"verdict"`
	// Expected is the scenario's expectation for this lock (check → verdict),
	// empty when the scenario states none (then every check must be valid).
	Expected map[string]string `json:"expected,omitempty"`
	// Outcome compares Verdict/Checks with Expected: as-expected |
	// unexpected | unknown.
	Outcome string `json:"outcome"`
	// ExitCode is what the command exited with (0..4, see README).
	ExitCode int `json:"exit_code"`

	// Checks, Violations and Incidents are the checker's own results
	// (checker.Result), as results.json holds them. Incidents group the
	// violations that share a cause, in order of their start; Violations
	// stay as their evidence.
	Checks     map[string]checker.CheckResult `json:"checks"`
	Violations []checker.Violation            `json:"violations"`
	Incidents  []checker.Incident             `json:"incidents"`
	Stats      Stats                          `json:"stats"`
	Faults     []FaultSummary                 `json:"faults,omitempty"`
	Thresholds []ThresholdResult              `json:"thresholds,omitempty"`
	// LossDetection: how long holders went on believing after the server
	// lost their key (single-master topologies with an observer).
	LossDetection *checker.LossDetection `json:"loss_detection,omitempty"`
	// LockConfig records the lock's effective options (adapters included).
	LockConfig map[string]any `json:"lock_config,omitempty"`

	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
	// Phases is where the run's wall time went (nil for a history checked
	// without its run, e.g. merged workers).
	Phases *Phases `json:"phases_ms,omitempty"`
	Events int     `json:"events"`
	// Notes are run-level remarks (auto backend choice, torn history, ...).
	Notes []string `json:"notes,omitempty"`
}

// FaultSummary is one fault firing as recorded in the history.
type FaultSummary struct {
	ID       int               `json:"id"`
	Kind     string            `json:"kind"`
	Target   string            `json:"target"`
	AtMS     float64           `json:"at_ms"`
	HealedMS float64           `json:"healed_ms,omitempty"`
	Applied  bool              `json:"applied"`
	Request  map[string]string `json:"request,omitempty"`
	Effect   map[string]string `json:"effect,omitempty"`
	// HealEffect is what the heal measurably did (state after, ...).
	HealEffect map[string]string `json:"heal_effect,omitempty"`
}

// Stats are the run's numbers, all computed from the history.
type Stats struct {
	// Throughput is completed acquire→release cycles per second of workload.
	Throughput float64 `json:"throughput"`
	// Cycles completed in the whole run (workload, heal and recovery).
	Cycles int64 `json:"cycles"`
	// WorkloadCycles completed during the workload phase, over WorkloadS
	// seconds: Throughput = WorkloadCycles / WorkloadS.
	WorkloadCycles int64   `json:"workload_cycles"`
	WorkloadS      float64 `json:"workload_s"`
	Acquires       Counts  `json:"acquires"`
	Releases       Counts  `json:"releases"`
	// LatencyUS per operation: acquire, release, cycle, handoff.
	LatencyUS map[string]Latency `json:"latency_us"`
	// Fairness is Jain's index over ok acquires per client (1 = even).
	Fairness float64 `json:"fairness"`
	// PerClient ok acquires.
	PerClient []int64 `json:"per_client,omitempty"`
	// Pauses and Lost count the clients' pause windows and lost leases.
	Pauses int64 `json:"pauses,omitempty"`
	Lost   int64 `json:"lost,omitempty"`
	// Server is the Redis-side cost per cycle (bench), when measured.
	Server *ServerCost `json:"server,omitempty"`
}

// Counts by result.
type Counts struct {
	OK      int64 `json:"ok"`
	Fail    int64 `json:"fail"`
	Unknown int64 `json:"unknown"`
}

// Latency summary in microseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// ServerCost is what Redis spent per cycle (INFO commandstats deltas).
type ServerCost struct {
	CommandsPerCycle float64            `json:"commands_per_cycle"`
	UsecPerCycle     float64            `json:"usec_per_cycle"`
	ByCommand        map[string]float64 `json:"by_command,omitempty"` // calls per cycle
}

// ThresholdResult is one evaluated threshold.
type ThresholdResult struct {
	Expr  string  `json:"expr"`
	Value float64 `json:"value"`
	// Actual is the value as text: a verdict (checks.*), or a latency with
	// its unit.
	Actual string `json:"actual,omitempty"`
	Passed bool   `json:"passed"`
	Error  string `json:"error,omitempty"`
}

// ResultsFile is results.json's name in a run directory.
const ResultsFile = "results.json"

// FillStats copies the analysis's numbers and fault windows into r. It
// leaves r alone when a is nil.
func FillStats(r *Results, a *Analysis) {
	if r == nil || a == nil {
		return
	}
	r.Stats = a.Stats
	r.Faults = a.Faults
	if r.Events == 0 {
		r.Events = a.Events
	}
	if r.Scenario == "" {
		r.Scenario = MetaString(a.Meta, "scenario")
	}
	if r.Lock == "" {
		r.Lock = MetaString(a.Meta, "lock")
	}
	if r.Backend == "" {
		r.Backend = MetaString(a.Meta, "backend")
	}
	if r.Topology == "" {
		r.Topology = MetaString(a.Meta, "topology")
	}
}

// WriteJSON writes v as indented JSON to path (atomically: temp + rename, so
// a reader never sees half a file).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// ReadResults loads a results.json.
func ReadResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a results.json: %w", path, err)
	}
	return &r, nil
}
