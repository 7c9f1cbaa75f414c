package campaign_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/campaign"
	"github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/report/metrics"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

func TestRunMatrixExpireThenUnlock(t *testing.T) {
	s, err := scenarios.Load("expire-then-unlock")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	locks := []string{"simple", "del-no-owner"}
	m, err := campaign.RunMatrix(context.Background(), campaign.MatrixOptions{Locks: locks, Scenarios: []*scenarios.Scenario{s},
		Out: out, Parallel: 1, Setup: runner.Setup{Backend: "process"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Cells) != len(locks) {
		t.Fatalf("%d cells, want %d", len(m.Cells), len(locks))
	}
	// The unlock check reads del-no-owner's DEL from the command record
	// (who ran it, on which connection), however late the keyspace
	// notifications come under the -race suite.
	for _, c := range m.Cells {
		if !c.Applicable || c.Outcome != "as-expected" {
			t.Errorf("cell %s/%s: applicable %v, outcome %q (%s), checks %v, expected %v, notes %q",
				c.Scenario, c.Lock, c.Applicable, c.Outcome, c.Reason, c.Checks, c.Expected, c.Notes)
		}
		if c.Dir == "" || !strings.HasPrefix(c.Dir, out) {
			t.Errorf("cell %s/%s: dir %q not under %q", c.Scenario, c.Lock, c.Dir, out)
		}
		if c.Lock == "del-no-owner" && (c.Checks["unlock"] != "invalid" || c.Checks["mutex"] != "invalid") {
			t.Errorf("del-no-owner: checks %v, want unlock and mutex invalid", c.Checks)
		}
		if c.Dir != "" {
			var r metrics.Results
			if b, err := os.ReadFile(filepath.Join(c.Dir, "results.json")); err != nil || json.Unmarshal(b, &r) != nil {
				t.Errorf("cell %s/%s: results.json: %v", c.Scenario, c.Lock, err)
			} else if r.CommandRecord != "monitor" || r.OwnershipSource != "command-record" {
				t.Errorf("cell %s/%s: command record %q, ownership source %q: want the record", c.Scenario, c.Lock, r.CommandRecord, r.OwnershipSource)
			}
		}
	}
	if m.ExitCode != 0 {
		t.Errorf("matrix exit code %d, want 0", m.ExitCode)
	}
	if err := report.WriteMatrix(out, m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"matrix.md", "matrix.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "expire-then-unlock") || !strings.Contains(string(b), "del-no-owner") {
			t.Errorf("%s does not name the scenario and the locks:\n%s", f, b)
		}
	}
}
