package metrics

// The matrix document: matrix.json's cells. The runner fills it; lockchaos
// matrix merge reads it back; report renders it (matrix.md, the verdict
// grid).

// Cell is one lock × scenario outcome.
type Cell struct {
	Scenario   string            `json:"scenario"`
	Lock       string            `json:"lock"`
	Applicable bool              `json:"applicable"`
	Reason     string            `json:"reason,omitempty"` // why not applicable, or the error
	Verdict    string            `json:"verdict,omitempty"`
	Checks     map[string]string `json:"checks,omitempty"`
	Expected   map[string]string `json:"expected,omitempty"`
	Outcome    string            `json:"outcome"` // as-expected | unexpected | unknown | n/a | error
	Causes     []string          `json:"causes,omitempty"`
	Incidents  int               `json:"incidents,omitempty"` // violations grouped (results.json incidents)
	Dir        string            `json:"dir,omitempty"`
	Throughput float64           `json:"throughput,omitempty"`
	Notes      []string          `json:"notes,omitempty"`
	// Attempts is how many runs the cell took (more than 1: retried).
	Attempts int `json:"attempts,omitempty"`
	// With seeds: each seed's run, the rates per check over them, and
	// Label ("invalid 2/3" where the seeds' verdicts differ). Verdict is
	// then the most common verdict and Checks give a check's verdict where
	// every seed agreed, else its rate.
	Seeds []SeedRun         `json:"seeds,omitempty"`
	Rates map[string][]Rate `json:"rates,omitempty"`
	Label string            `json:"label,omitempty"`

	// Phases is where the cell's time went (summed over its seeds).
	Phases *Phases `json:"phases_ms,omitempty"`

	// RunExit is the exit code of the cell's single run (for its SeedRun).
	RunExit int `json:"-"`
}

// Matrix is the whole table.
type Matrix struct {
	Locks     []string `json:"locks"`
	Scenarios []string `json:"scenarios"`
	// Seeds each cell ran with (empty: each scenario's own seed, once).
	Seeds    []uint64 `json:"seeds,omitempty"`
	Cells    []Cell   `json:"cells"`
	ExitCode int      `json:"exit_code"`
	// Shard is set when the matrix is one shard of several.
	Shard *Shard `json:"shard,omitempty"`
	// WallMS is the matrix's wall time; Parallel how many cells ran at
	// once at most.
	WallMS   float64 `json:"wall_ms,omitempty"`
	Parallel int     `json:"parallel,omitempty"`
}

// OutcomeElsewhere marks, in a shard's matrix, a cell another shard runs.
const OutcomeElsewhere = "other-shard"

// Shard is one shard's place and what it must share with the others.
type Shard struct {
	Index int `json:"index"` // 1..Count
	Count int `json:"count"`
	// Build is the harness build (VCS revision, "+dirty" when modified);
	// Catalog hashes the scenarios as run. Shards of one matrix agree on
	// both.
	Build   string `json:"build"`
	Catalog string `json:"catalog"`
}
