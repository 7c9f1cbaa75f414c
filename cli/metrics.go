package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner"
)

// run --metrics-addr: a Prometheus / OpenMetrics endpoint a soak run's
// Prometheus can scrape (docs/ci.md). Counters and gauges come from the
// progress snapshot (once a second, the numbers of the progress line); the
// acquire latency histogram from every acquire the history records.

// metricsFlags are run's metrics endpoint flags.
type metricsFlags struct {
	addr        string
	allowRemote bool
}

func (f *metricsFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "metrics-addr", "", "serve Prometheus/OpenMetrics metrics of the run at http://ADDR/metrics while it runs, e.g. 127.0.0.1:9464 (loopback only unless --metrics-allow-remote)")
	fl.BoolVar(&f.allowRemote, "metrics-allow-remote", false, "let --metrics-addr listen on an address other than loopback")
}

// acquireBuckets are the acquire latency histogram's upper bounds in
// seconds: 100µs (a loopback round trip) to 10s (a blocked acquire).
var acquireBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// checkMetricsAddr accepts host:port with a loopback host (127.0.0.0/8,
// ::1, localhost), or any host with allowRemote. ":PORT" listens on every
// interface, so it is not loopback.
func checkMetricsAddr(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %q: want HOST:PORT, e.g. 127.0.0.1:9464: %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("--metrics-addr %q: port %q is not a number in 0..65535", addr, port)
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) || allowRemote {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return fmt.Errorf("--metrics-addr %q: %s is not a loopback address (the endpoint tells whoever connects about the run); pass --metrics-allow-remote to serve there", addr, host)
}

// start serves the endpoint when --metrics-addr is given, wiring it into
// o (its Progress and Tap); the returned stop shuts the server down.
func (f *metricsFlags) start(cmd *cobra.Command, stderr io.Writer, o *runner.Options) (stop func(), err error) {
	if !cmd.Flags().Changed("metrics-addr") {
		return func() {}, nil
	}
	if err := checkMetricsAddr(f.addr, f.allowRemote); err != nil {
		return nil, exitWith(ExitBadInput, err)
	}
	m := newRunMetrics(o)
	reg := prometheus.NewRegistry()
	if err := reg.Register(m); err != nil {
		return nil, exitWith(ExitInfra, fmt.Errorf("metrics: %w", err))
	}
	if err := reg.Register(m.acquire); err != nil {
		return nil, exitWith(ExitInfra, fmt.Errorf("metrics: %w", err))
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, exitWith(ExitBadInput, fmt.Errorf("--metrics-addr %s: %w", f.addr, err))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "lockchaos: metrics endpoint: %v\n", err)
		}
	}()
	fmt.Fprintf(stderr, "lockchaos: metrics at http://%s/metrics\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// runMetrics collects one run's metrics.
type runMetrics struct {
	scenario, lock, seed, backend string
	live                          bool
	acquire                       *prometheus.HistogramVec
	byResult                      map[history.Result]prometheus.Observer

	mu   sync.Mutex
	last runner.Progress // the latest progress snapshot
}

var (
	descInfo     = prometheus.NewDesc("lockchaos_run_info", "The run: scenario, lock, seed, backend asked for; 1.", []string{"scenario", "lock", "seed", "backend"}, nil)
	descPhase    = prometheus.NewDesc("lockchaos_run_phase", "1 for the phase the run is in (starting until the workload begins).", []string{"phase"}, nil)
	descElapsed  = prometheus.NewDesc("lockchaos_run_elapsed_seconds", "Seconds since the workload began.", nil, nil)
	descCycles   = prometheus.NewDesc("lockchaos_cycles_total", "Completed acquire-release cycles.", nil, nil)
	descCPS      = prometheus.NewDesc("lockchaos_cycles_per_second", "Cycles per second over the last progress interval (about a second).", nil, nil)
	descOverlaps = prometheus.NewDesc("lockchaos_overlap_estimate_total", "Holds that began while another client believed it held the same key: the workload's live estimate, not the checker's verdict (with --live see lockchaos_live_violations_total).", nil, nil)
	descActive   = prometheus.NewDesc("lockchaos_faults_active", "Faults in effect now.", nil, nil)
	descFired    = prometheus.NewDesc("lockchaos_faults_fired_total", "Faults fired so far (taken effect or not).", nil, nil)
	descLiveV    = prometheus.NewDesc("lockchaos_live_violations_total", "Violations the live checker has found so far (run --live).", nil, nil)
	descLiveTo   = prometheus.NewDesc("lockchaos_live_judged_seconds", "How far into the run the live checker has judged (run --live).", nil, nil)
	descLiveBeh  = prometheus.NewDesc("lockchaos_live_behind", "1 when the live checker fell behind and the history is checked after the run (run --live).", nil, nil)
)

// newRunMetrics makes the collector for o's run and hooks it into o: the
// progress callback (kept for the display) and the history tap.
func newRunMetrics(o *runner.Options) *runMetrics {
	m := &runMetrics{scenario: o.Scenario.Name, lock: o.Lock, seed: strconv.FormatUint(o.Scenario.Seed, 10), backend: o.Backend, live: o.Live,
		last: runner.Progress{Phase: "starting"}}
	m.acquire = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lockchaos_acquire_latency_seconds",
		Help: "Acquire call latency, invoke to ack, by result (ok, fail, unknown).", Buckets: acquireBuckets}, []string{"result"})
	m.byResult = map[history.Result]prometheus.Observer{}
	for _, r := range []history.Result{history.OK, history.Fail, history.Unknown} {
		m.byResult[r] = m.acquire.WithLabelValues(string(r))
	}
	display := o.Progress
	o.Progress = func(p runner.Progress) {
		m.mu.Lock()
		m.last = p
		m.mu.Unlock()
		if display != nil {
			display(p)
		}
	}
	o.Tap = m.event
	return m
}

// event sees every recorded event (under the history writer's lock: an
// acquire costs a histogram observation, nothing else does anything).
func (m *runMetrics) event(e *history.Event) {
	if e.Op != history.OpAcquire || e.End == 0 {
		return
	}
	if obs, ok := m.byResult[e.Result]; ok {
		obs.Observe(float64(e.End-e.T) / 1e9)
	}
}

// Describe implements prometheus.Collector.
func (m *runMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInfo, descPhase, descElapsed, descCycles, descCPS, descOverlaps, descActive, descFired} {
		ch <- d
	}
	if m.live {
		ch <- descLiveV
		ch <- descLiveTo
		ch <- descLiveBeh
	}
}

// Collect implements prometheus.Collector: the latest progress snapshot.
func (m *runMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	p := m.last
	m.mu.Unlock()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	ch <- prometheus.MustNewConstMetric(descInfo, gauge, 1, m.scenario, m.lock, m.seed, m.backend)
	ch <- prometheus.MustNewConstMetric(descPhase, gauge, 1, p.Phase)
	ch <- prometheus.MustNewConstMetric(descElapsed, gauge, p.Elapsed.Seconds())
	ch <- prometheus.MustNewConstMetric(descCycles, counter, float64(p.Cycles))
	ch <- prometheus.MustNewConstMetric(descCPS, gauge, p.CyclesPerSec)
	ch <- prometheus.MustNewConstMetric(descOverlaps, counter, float64(p.Overlaps))
	ch <- prometheus.MustNewConstMetric(descActive, gauge, float64(p.ActiveFaults))
	ch <- prometheus.MustNewConstMetric(descFired, counter, float64(p.FaultsFired))
	if !m.live {
		return
	}
	var violations, judged, behind float64
	if l := p.Live; l != nil {
		violations, judged = float64(l.Violations), float64(l.JudgedToNS)/1e9
		if l.Behind {
			behind = 1
		}
	}
	ch <- prometheus.MustNewConstMetric(descLiveV, counter, violations)
	ch <- prometheus.MustNewConstMetric(descLiveTo, gauge, judged)
	ch <- prometheus.MustNewConstMetric(descLiveBeh, gauge, behind)
}
