package locktest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// recorder is a T that keeps the messages of Errorf and Logf instead of
// failing (the test asserts that Explore fails a broken control).
type recorder struct {
	*testing.T
	errs, logs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func TestExploreFailsABrokenControl(t *testing.T) {
	testenv.Long(t)
	testenv.Need(t, "redis-server")
	r := &recorder{T: t}
	dir := t.TempDir()
	Explore(r, "setnx-expire", Budget(180*time.Second), MaxFindings(1), SaveFindings(dir),
		Kinds(history.FaultCrashClient, history.FaultPauseClient), With(Backend("process")))
	for _, l := range r.logs {
		t.Log(l)
	}
	if len(r.errs) == 0 || !strings.Contains(r.errs[0], "setnx-expire") || !strings.Contains(r.errs[0], "lockchaos run ") {
		t.Fatalf("Explore did not fail setnx-expire with its finding: %q", r.errs)
	}
	t.Log(r.errs[0])
}
