package metrics

// The card document: card.json, one column per lock of what campaign's
// card ran (the matrix over seeds, the margins, the bench) and reused.
// report renders it (card.md, card.html).

// Card is a side-by-side report card of locks.
type Card struct {
	Locks []CardLock `json:"locks"`
	// Families are the fault families in row order; Scenarios the
	// scenarios run, each with its family.
	Families  []string       `json:"families"`
	Scenarios []CardScenario `json:"scenarios"`
	// Cells are the matrix's cells (lock × scenario) judged over the seeds.
	Cells    []Cell        `json:"cells"`
	Findings []CardFinding `json:"findings,omitempty"`
	Ran      CardRan       `json:"ran"`
}

// CardScenario is one scenario of the card and its fault family ("none":
// no fault).
type CardScenario struct {
	Name   string `json:"name"`
	Family string `json:"family"`
}

// CardLock is one lock's column.
type CardLock struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Library and Version: the third-party module an adapter wraps and its
	// version, or "lockchaos built-in".
	Library string `json:"library"`
	Version string `json:"version,omitempty"`
	// Safety per fault family (keyed by family): the verdicts over every
	// run of the family's scenarios.
	Safety  map[string]FamilyRate `json:"safety"`
	Margins []CardMargin          `json:"margins,omitempty"`
	Loss    *CardLoss             `json:"loss,omitempty"`
	Bench   *CardBench            `json:"bench,omitempty"`
	// NotBenched says why the card did not bench it (a lock that needs
	// replicas on servers without any).
	NotBenched string `json:"not_benched,omitempty"`
	// Explored is the lock's exploration, when the card ran one.
	Explored *CardExplore `json:"explored,omitempty"`
	// Reference is the built-in correct lock of its capabilities; Versus,
	// per family, how the lock did against it on this card (Versus*
	// values; none when the reference is not on the card); Verdict the
	// lock's one line, VerdictClass its Verdict* class
	// (JudgeAgainstReferences).
	Reference    string            `json:"reference,omitempty"`
	Versus       map[string]string `json:"versus,omitempty"`
	Verdict      string            `json:"verdict,omitempty"`
	VerdictClass string            `json:"verdict_class,omitempty"`
}

// CardExplore sums a lock's exploration: schedules tried, findings (each
// also a CardFinding), schedules its reference failed too (limits).
type CardExplore struct {
	Budget    string `json:"budget,omitempty"`
	Schedules int    `json:"schedules"`
	Findings  int    `json:"findings"`
	Limits    int    `json:"limits"`
	Dir       string `json:"dir,omitempty"`
	Reference string `json:"reference,omitempty"`
	// Self: the lock is its own reference (a correct built-in): not
	// explored, since the comparison could only find timing noise.
	Self bool `json:"self,omitempty"`
}

// FamilyRate counts one family's runs of a lock by verdict.
type FamilyRate struct {
	Runs       int `json:"runs"`
	Valid      int `json:"valid"`
	Invalid    int `json:"invalid"`
	Unknown    int `json:"unknown"`
	Unexpected int `json:"unexpected"` // runs whose outcome was not the scenario's expectation
}

// Count adds one run of verdict (valid, invalid, anything else unknown).
func (r *FamilyRate) Count(verdict string) {
	r.Runs++
	switch verdict {
	case "valid":
		r.Valid++
	case "invalid":
		r.Invalid++
	default:
		r.Unknown++
	}
}

// CardMargin is one margin template's smallest failing magnitude for a
// lock (in Unit: multiples of the TTL, or a clock's rate; Never (-1) when
// it did not fail in [Lo, Hi]); Falling: the largest failing value.
type CardMargin struct {
	Template string   `json:"template"`
	Family   string   `json:"family"`
	Unit     string   `json:"unit"`
	At       float64  `json:"at"`
	Lo       float64  `json:"lo"`
	Hi       float64  `json:"hi"`
	Falling  bool     `json:"falling,omitempty"`
	Checks   []string `json:"checks,omitempty"`
}

// CardLoss is how late the holder learned it lost the key, over the runs
// where the server lost it (failover, empty restart, partition): p50 is the
// median of the runs' p50s, p99 and max the worst run's. Never counts the
// losses the holder never learned of (released without learning, or still
// believing at the end).
type CardLoss struct {
	Runs   int     `json:"runs"`
	Losses int     `json:"losses"`
	Never  int     `json:"never"`
	P50MS  float64 `json:"p50_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// CardBench is the lock's bench run with the yardsticks measured in the
// same run (redis-benchmark's ceiling, bare go-redis).
type CardBench struct {
	Lock      BenchLock `json:"lock"`
	CeilingCS float64   `json:"ceiling_cycles_per_sec,omitempty"`
	GoRedisCS float64   `json:"go_redis_cycles_per_sec,omitempty"`
	Duration  string    `json:"duration"`
	Clients   int       `json:"clients"`
	Dir       string    `json:"dir"`
}

// CardFinding is a scenario a lock failed on some seeds.
type CardFinding struct {
	Lock     string   `json:"lock"`
	Scenario string   `json:"scenario"`
	Family   string   `json:"family"`
	Invalid  int      `json:"invalid"`
	Runs     int      `json:"runs"`
	Causes   []string `json:"causes,omitempty"`
	// Expected: the scenario expects this lock to fail there (a known
	// limit of its design, not news).
	Expected bool `json:"expected"`
	// Dir is the first failing seed's run directory; Replay the command
	// that runs it again.
	Dir    string `json:"dir"`
	Replay string `json:"replay"`
	// ScenarioFile is the file Replay runs when it is not a catalog
	// scenario (an explored finding's minimal schedule).
	ScenarioFile string `json:"scenario_file,omitempty"`
	// Reference is the reference lock's rate on an explored finding's
	// schedule ("simple 0/5").
	Reference string `json:"reference,omitempty"`
	// Known: expected, but the lock's own: the scenario expects the
	// built-in of the lock's capabilities to pass that check (a finding
	// the catalog asserts), not a limit of the design.
	Known bool `json:"known,omitempty"`
	// Unconfirmed: an explored finding whose confirmation the budget cut
	// short (inconclusive).
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

// CardRan says what ran: the harness, the servers, the machine, the seeds,
// and how much of the card was reused from saved runs.
type CardRan struct {
	Lockchaos string   `json:"lockchaos"`
	Backend   string   `json:"backend"`
	Redis     string   `json:"redis,omitempty"`
	Machine   string   `json:"machine"`
	Date      string   `json:"date"`
	Seeds     []uint64 `json:"seeds"`
	Budget    string   `json:"budget,omitempty"`
	WallS     float64  `json:"wall_s"`
	// Runs is every run the card needed; Reused those found saved with the
	// same inputs; NotRun those the budget left out.
	Runs   int      `json:"runs"`
	Reused int      `json:"reused"`
	NotRun []string `json:"not_run,omitempty"`
	Cache  string   `json:"cache"`
}
