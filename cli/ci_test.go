package cli

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/lockchaos/lockchaos/checker"
)

// junitFile is what a JUnit reader sees of lockchaos's file.
type junitFile struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name      string  `xml:"name,attr"`
			Classname string  `xml:"classname,attr"`
			Time      float64 `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readJUnitFile validates path against the JUnit schema with xmllint
// (skipping that part only when xmllint is not installed) and decodes it.
func readJUnitFile(t *testing.T, path string) junitFile {
	t.Helper()
	if xmllint, err := exec.LookPath("xmllint"); err != nil {
		t.Log("xmllint not installed (Debian: apt-get install libxml2-utils): the JUnit file is decoded but not validated")
	} else if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("..", "report", "testdata", "junit.xsd"), path).CombinedOutput(); err != nil {
		t.Fatalf("%s does not validate against the JUnit schema: %v\n%s", path, err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f junitFile
	if err := xml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return f
}

// A real run with every CI output: the metrics endpoint scraped while it
// runs and parsed with the Prometheus text parser, the JUnit file, the step
// summary.
func TestRunCIOutputs(t *testing.T) {
	runSlot(t)
	tmp := t.TempDir()
	dir, junit, summary := filepath.Join(tmp, "run"), filepath.Join(tmp, "ci", "junit.xml"), filepath.Join(tmp, "step-summary.md")
	if err := os.WriteFile(summary, []byte("# before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(StepSummaryEnv, summary)

	var stdout, stderr syncBuffer
	codec := make(chan int, 1)
	go func() {
		codec <- Main([]string{"run", "gc-pause", "--lock", "simple", "--backend", "process", "--duration", "3s", "--expect", "--live", "-q",
			"--out", dir, "--junit", junit, "--metrics-addr", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	addrRE := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	var url string
	var code int
	var scrapes []map[string]*dto.MetricFamily
	deadline := time.Now().Add(60 * time.Second)
	for done := false; !done; {
		select {
		case code = <-codec:
			done = true
			continue
		case <-time.After(300 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end within 60s\nstderr:\n%s", stderr.String())
		}
		if url == "" {
			if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
				url = m[1]
			}
			continue
		}
		if fams, err := scrape(url, ""); err == nil {
			scrapes = append(scrapes, fams)
		} else if !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("scrape %s: %v", url, err)
		}
	}
	r := readResults(t, dir)
	if code != r.ExitCode || code > 2 {
		t.Fatalf("exit %d, results.json exit_code %d\nstdout:\n%s\nstderr:\n%s", code, r.ExitCode, stdout.String(), stderr.String())
	}
	if url == "" {
		t.Fatalf("no metrics address on stderr:\n%s", stderr.String())
	}
	if _, err := scrape(url, ""); err == nil {
		t.Error("the endpoint still serves after the run ended")
	}

	// During the workload the counters move and the histogram fills.
	var inWorkload map[string]*dto.MetricFamily
	for _, fams := range scrapes {
		if value(fams, "lockchaos_run_phase", "phase", "workload") == 1 && value(fams, "lockchaos_cycles_total", "", "") > 0 {
			inWorkload = fams
		}
	}
	if inWorkload == nil {
		t.Fatalf("%d scrapes, none in the workload phase with cycles counted", len(scrapes))
	}
	last := scrapes[len(scrapes)-1]
	acq := last["lockchaos_acquire_latency_seconds"]
	if acq == nil || acq.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("lockchaos_acquire_latency_seconds: %v, want a histogram", acq)
	}
	var ok *dto.Histogram
	for _, m := range acq.Metric {
		if labelOf(m, "result") == "ok" {
			ok = m.GetHistogram()
		}
	}
	if ok == nil || ok.GetSampleCount() == 0 || ok.GetSampleSum() <= 0 {
		t.Fatalf("no ok acquires in the histogram: %v", acq)
	}
	prev := uint64(0)
	for _, b := range ok.Bucket {
		if b.GetCumulativeCount() < prev || b.GetCumulativeCount() > ok.GetSampleCount() {
			t.Errorf("bucket le=%v count %d: not cumulative under %d", b.GetUpperBound(), b.GetCumulativeCount(), ok.GetSampleCount())
		}
		prev = b.GetCumulativeCount()
	}
	for _, name := range []string{"lockchaos_faults_active", "lockchaos_overlap_estimate_total", "lockchaos_live_violations_total", "lockchaos_live_judged_seconds"} {
		if last[name] == nil {
			t.Errorf("%s missing from the last scrape", name)
		}
	}
	// gc-pause fires one pause-client at 500ms.
	if got := value(last, "lockchaos_faults_fired_total", "", ""); got != 1 {
		t.Errorf("lockchaos_faults_fired_total %v in the last scrape, want 1", got)
	}
	if value(last, "lockchaos_run_info", "lock", "simple") != 1 {
		t.Errorf("lockchaos_run_info does not name the lock: %v", last["lockchaos_run_info"])
	}
	if got := value(last, "lockchaos_live_violations_total", "", ""); r.Verdict == "invalid" && got == 0 && scrapeAfter(last) {
		t.Errorf("the run found violations, the last scrape after the workload says 0")
	}

	// The JUnit file: one test case, passed, failed or in error as the
	// run exited (0, 1, 2: --expect, so by the expectation), with the
	// run's wall time.
	f := readJUnitFile(t, junit)
	if f.Tests != 1 || len(f.Suites) != 1 || len(f.Suites[0].Cases) != 1 {
		t.Fatalf("junit: %+v, want 1 test", f)
	}
	c := f.Suites[0].Cases[0]
	switch code {
	case 0:
		if f.Failures != 0 || f.Errors != 0 {
			t.Errorf("exit 0, junit %+v: want it passed", c)
		}
	case 1:
		if f.Failures != 1 || c.Failure == nil || !strings.Contains(c.Failure.Message, "expected") {
			t.Errorf("exit 1, junit %+v: want a failure naming the check not as expected", c)
		}
	case 2:
		if f.Errors != 1 || c.Error == nil || !strings.Contains(c.Error.Message, "unknown") {
			t.Errorf("exit 2, junit %+v: want an error saying what is unknown", c)
		}
	}
	t.Logf("exit %d; test case %+v", code, c)
	if c.Classname != "gc-pause" || c.Name != "simple" || r.Phases == nil {
		t.Fatalf("test case %+v (phases %v), want gc-pause / simple", c, r.Phases)
	}
	if want := r.Phases.Total() / 1000; c.Time < want-0.001 || c.Time > want+0.001 {
		t.Errorf("time %v, want %.3f (the phases' sum)", c.Time, want)
	}

	// The step summary: what was there, then the run's summary.md.
	got, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "# before\n"+string(md)+"\n" {
		t.Errorf("step summary:\n%s\nwant the old content, then summary.md:\n%s", got, md)
	}
}

// scrapeAfter: the scrape was taken after the workload phase.
func scrapeAfter(fams map[string]*dto.MetricFamily) bool {
	return value(fams, "lockchaos_run_phase", "phase", "workload") != 1 && value(fams, "lockchaos_run_phase", "phase", "starting") != 1
}

// scrape gets url and parses it with the Prometheus text parser; accept,
// when set, is the Accept header.
func scrape(url, accept string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	var p expfmt.TextParser
	return p.TextToMetricFamilies(resp.Body)
}

// value is the value of the first sample of family name whose label has
// val (label "": the first sample); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name, label, val string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		if label != "" && labelOf(m, label) != val {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
	}
	return -1
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A non-loopback address is refused before anything runs, naming the flag
// that allows it; a bad one names the value.
func TestMetricsAddrLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		addr  string
		allow bool
		want  string // "" = accepted
	}{
		{"127.0.0.1:9464", false, ""},
		{"[::1]:0", false, ""},
		{"localhost:9464", false, ""},
		{"127.3.4.5:9464", false, ""},
		{"0.0.0.0:9464", false, "--metrics-allow-remote"},
		{":9464", false, "every interface"},
		{"10.1.2.3:9464", false, "--metrics-allow-remote"},
		{"10.1.2.3:9464", true, ""},
		{"127.0.0.1", false, "HOST:PORT"},
		{"127.0.0.1:http", false, `port "http"`},
		{"127.0.0.1:70000", false, "0..65535"},
	} {
		err := checkMetricsAddr(c.addr, c.allow)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s (allow %v): %v, want accepted", c.addr, c.allow, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.addr)):
			t.Errorf("%s (allow %v): %v, want an error naming %q and the address", c.addr, c.allow, err, c.want)
		}
	}
	code, out, errOut := lockchaos(t, "run", "smoke", "--backend", "process", "--metrics-addr", "0.0.0.0:9464")
	if code != 3 || !strings.Contains(errOut, "--metrics-allow-remote") || out != "" {
		t.Errorf("exit %d, stderr %q: want 3 naming --metrics-allow-remote before the run", code, errOut)
	}
	code, _, errOut = lockchaos(t, "run", "smoke", "--backend", "process", "--metrics-addr", "127.0.0.1:9464", "--seeds", "1-2")
	if code != 3 || !strings.Contains(errOut, "--metrics-addr") {
		t.Errorf("--metrics-addr with --seeds: exit %d, stderr %q: want 3", code, errOut)
	}
	dir := t.TempDir()
	code, _, errOut = lockchaos(t, "run", "smoke", "--backend", "process", "--junit", dir)
	if code != 3 || !strings.Contains(errOut, "--junit") {
		t.Errorf("--junit naming a directory: exit %d, stderr %q: want 3", code, errOut)
	}
}

// A matrix whose expectation is wrong on purpose (gc-pause expecting the
// locks valid), run as two shards and merged: each shard's JUnit file holds
// its own cell, the merged one both, each a failure carrying its incident's
// sentence and cause; the step summary gets each matrix.md in turn.
func TestMatrixJUnitFailure(t *testing.T) {
	runSlot(t)
	b, err := os.ReadFile(filepath.Join("..", "scenarios", "catalog", "gc-pause.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	body, _, _ := strings.Cut(string(b), "\nexpect:")
	body = strings.Replace(body, "name: gc-pause", "name: gc-pause-expects-valid", 1) + "\nexpect:\n  default: {mutex: valid, resource: valid}\n"
	scen := filepath.Join(t.TempDir(), "gc-pause-expects-valid.yaml")
	if err := os.WriteFile(scen, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	summary := filepath.Join(tmp, "summary.md")
	t.Setenv(StepSummaryEnv, summary)
	var shards []string
	locks := map[string]string{} // lock → its shard's directory
	var mds []string
	for i := 1; i <= 2; i++ {
		out, junit := filepath.Join(tmp, fmt.Sprintf("shard-%d", i)), filepath.Join(tmp, fmt.Sprintf("junit-%d.xml", i))
		code, stdout, stderr := lockchaos(t, "matrix", "--locks", "simple,fenced", "--scenarios", scen, "--backend", "process", "--parallel", "1",
			"--shard", fmt.Sprintf("%d/2", i), "--out", out, "--junit", junit)
		wantExit(t, code, 1, stdout, stderr)
		f := readJUnitFile(t, junit)
		if f.Tests != 1 || f.Failures != 1 || len(f.Suites) != 1 || len(f.Suites[0].Cases) != 1 {
			t.Fatalf("shard %d's junit: %+v, want its 1 cell, failed (the other shard's left out)", i, f)
		}
		locks[f.Suites[0].Cases[0].Name] = out
		shards = append(shards, out)
		mds = append(mds, readFile(t, filepath.Join(out, "matrix.md")))
	}
	if locks["simple"] == "" || locks["fenced"] == "" {
		t.Fatalf("the shards' test cases are %v, want simple and fenced", locks)
	}
	merged, junit := filepath.Join(tmp, "merged"), filepath.Join(tmp, "junit.xml")
	code, stdout, stderr := lockchaos(t, append([]string{"matrix", "merge", "--out", merged, "--junit", junit}, shards...)...)
	wantExit(t, code, 1, stdout, stderr)
	mds = append(mds, readFile(t, filepath.Join(merged, "matrix.md")))

	f := readJUnitFile(t, junit)
	if f.Tests != 2 || f.Failures != 2 || len(f.Suites) != 1 || len(f.Suites[0].Cases) != 2 {
		t.Fatalf("merged junit: %+v, want 2 tests, 2 failures", f)
	}
	for _, c := range f.Suites[0].Cases {
		r := readResults(t, filepath.Join(locks[c.Name], "gc-pause-expects-valid", c.Name))
		var in *checker.Incident
		for i := range r.Incidents {
			if r.Incidents[i].Counts["mutex"] > 0 && in == nil {
				in = &r.Incidents[i]
			}
		}
		if in == nil {
			t.Fatalf("%s: the run found no mutex incident: %+v", c.Name, r.Incidents)
		}
		if c.Classname != "gc-pause-expects-valid" || c.Failure == nil || !strings.HasPrefix(c.Failure.Message, "mutex: expected valid, got invalid: "+in.Sentence+" (cause: "+in.Cause+")") {
			t.Errorf("%s: failure %+v, want mutex's first incident, %q (cause %s)", c.Name, c.Failure, in.Sentence, in.Cause)
		}
	}
	if got := readFile(t, summary); got != strings.Join(mds, "\n")+"\n" {
		t.Errorf("step summary:\n%s\nwant the two shards' matrix.md and the merged one", got)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run --seeds: a test case per seed, named lock/seed-N, each with its own
// run's wall time; the step summary gets seeds.md.
func TestRunSeedsJUnit(t *testing.T) {
	runSlot(t)
	tmp := t.TempDir()
	out, junit, summary := filepath.Join(tmp, "run"), filepath.Join(tmp, "junit.xml"), filepath.Join(tmp, "summary.md")
	t.Setenv(StepSummaryEnv, summary)
	code, stdout, stderr := lockchaos(t, "run", "smoke", "--lock", "simple", "--backend", "process", "--duration", "1s", "--seeds", "1-2", "-q",
		"--out", out, "--junit", junit)
	f := readJUnitFile(t, junit)
	if f.Tests != 2 || len(f.Suites) != 1 {
		t.Fatalf("junit %+v, want 2 test cases (exit %d)\n%s\n%s", f, code, stdout, stderr)
	}
	for i, c := range f.Suites[0].Cases {
		dir := filepath.Join(out, fmt.Sprintf("seed-%d", i+1))
		r := readResults(t, dir)
		if c.Classname != "smoke" || c.Name != fmt.Sprintf("simple/seed-%d", i+1) {
			t.Errorf("case %d: %s / %s, want smoke / simple/seed-%d", i, c.Classname, c.Name, i+1)
		}
		if want := r.Phases.Total() / 1000; c.Time < want-0.001 || c.Time > want+0.001 {
			t.Errorf("%s: time %v, want %.3f (its phases' sum)", c.Name, c.Time, want)
		}
		if (r.ExitCode == 0) != (c.Failure == nil && c.Error == nil) {
			t.Errorf("%s: exit code %d but test case %+v", c.Name, r.ExitCode, c)
		}
	}
	if got, want := readFile(t, summary), readFile(t, filepath.Join(out, "seeds.md"))+"\n"; got != want {
		t.Errorf("step summary:\n%s\nwant seeds.md:\n%s", got, want)
	}
}
