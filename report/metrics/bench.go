package metrics

// The bench document: bench.json's numbers per lock and the yardsticks
// measured beside them. The runner fills it; report renders it (bench.md).

// BenchLock is one lock's numbers.
type BenchLock struct {
	Lock       string             `json:"lock"`
	Kind       string             `json:"kind"`
	Nodes      int                `json:"nodes"`
	Throughput float64            `json:"throughput"`
	Cycles     int64              `json:"cycles"`
	FailedAcq  int64              `json:"failed_acquires"`
	Fairness   float64            `json:"fairness"`
	LatencyUS  map[string]Latency `json:"latency_us"`
	Server     *ServerCost        `json:"server,omitempty"`
	// NoHistoryThroughput is the same run with recording off (the median
	// of Repeat runs).
	NoHistoryThroughput float64 `json:"no_history_throughput,omitempty"`
	// Runs and NoHistoryRuns are every run's throughput when Repeat > 1.
	Runs          []float64 `json:"runs,omitempty"`
	NoHistoryRuns []float64 `json:"no_history_runs,omitempty"`
	Verdict       string    `json:"verdict"`
	Dir           string    `json:"dir"`
	// RecordingCostPct is the throughput recording costs, in percent of the
	// recording-off throughput: the median over the on/off pairs (--overhead).
	RecordingCostPct float64 `json:"recording_cost_pct,omitempty"`
	// Interrupted: an interrupt cut this lock's (median) run short.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Bench is the whole comparison.
type Bench struct {
	Clients  int         `json:"clients"`
	Keys     int         `json:"keys"`
	Nodes    int         `json:"nodes"`
	KeyDist  string      `json:"key_dist"`
	Repeat   int         `json:"repeat,omitempty"`
	Duration string      `json:"duration"`
	Mode     string      `json:"mode"`
	Backend  string      `json:"backend"`
	Machine  string      `json:"machine"`
	Locks    []BenchLock `json:"locks"`
	// Ceiling from redis-benchmark against node 1 (requests/s).
	SetNXPX   float64 `json:"redis_benchmark_set_nx_px,omitempty"`
	EvalSHA   float64 `json:"redis_benchmark_evalsha,omitempty"`
	CeilingCS float64 `json:"ceiling_cycles_per_sec,omitempty"`
	// GoRedisCS is the same cycle (SET NX PX, then the unlock script) from
	// as many bare go-redis clients, connected as the bench's are, with no
	// lock code, no harness and no recording: what the client library alone
	// reaches, to tell its cost from the harness's.
	GoRedisCS float64 `json:"go_redis_cycles_per_sec,omitempty"`
	// CeilingRuns and GoRedisRuns are every measurement with Repeat > 1
	// (the fields above are their medians).
	CeilingRuns []float64 `json:"ceiling_runs,omitempty"`
	GoRedisRuns []float64 `json:"go_redis_runs,omitempty"`
	// SetRTTP50US is the p50 of a single SET round trip (one go-redis
	// client, same node), the yardstick for hand-off latency.
	SetRTTP50US float64 `json:"set_rtt_p50_us"`
	// FanOutRTTP50US is the p50 of one SET to every node at once (bare
	// go-redis, a goroutine per node): the yardstick for Redlock's acquire.
	FanOutRTTP50US float64 `json:"fan_out_rtt_p50_us,omitempty"`
	// NotRun are the locks asked for that an interrupt left unbenched.
	NotRun []string `json:"not_run,omitempty"`
}
