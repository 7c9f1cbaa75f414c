package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/explore"
	"github.com/lockchaos/lockchaos/report"
)

// An exploration's JUnit file: a confirmed finding is a failure led by its
// check and sentence, a candidate whose confirmation the budget cut short
// an error of type unknown, and an exploration without findings one passed
// case. Each validates against the schema.
func TestExploreJUnit(t *testing.T) {
	rep := &explore.Report{Lock: "del-no-owner", Reference: "simple", Findings: []*explore.Found{
		{N: 1, Check: "unlock", Cause: "deleted-by-non-owner", Sentence: "client 0 deleted client 1's key.", Confirmed: true},
		{N: 2, Check: "liveness", Cause: "key-not-freed", Sentence: "330 ms of waiting."},
	}}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := report.WriteJUnitFile(path, "lockchaos explore", nil, ExploreCases(rep)); err != nil {
		t.Fatal(err)
	}
	f := readJUnitFile(t, path)
	if f.Tests != 2 || f.Failures != 1 || f.Errors != 1 {
		t.Fatalf("junit %+v: want 2 cases, 1 failure, 1 error", f)
	}
	c := f.Suites[0].Cases[0]
	if c.Failure == nil || !strings.HasPrefix(c.Failure.Message, "unlock: client 0 deleted") {
		t.Errorf("finding 1: %+v", c)
	}
	if exploreExit(rep) != ExitViolated {
		t.Errorf("exit %d with a confirmed finding", exploreExit(rep))
	}
	rep.Findings = rep.Findings[1:]
	if exploreExit(rep) != ExitUnknown {
		t.Errorf("exit %d with only a cut-short candidate, want 2", exploreExit(rep))
	}
	rep.Findings = nil
	if err := report.WriteJUnitFile(path, "lockchaos explore", nil, ExploreCases(rep)); err != nil {
		t.Fatal(err)
	}
	if f := readJUnitFile(t, path); f.Tests != 1 || f.Failures != 0 || f.Errors != 0 || exploreExit(rep) != ExitOK {
		t.Errorf("no findings: %+v, exit %d", f, exploreExit(rep))
	}
	// No screening run reached its verdict (a driver that could not
	// connect, after one that did): nothing was tested, not "no finding".
	rep.Schedules, rep.Classes = 3, map[explore.Class]int{explore.Errored: 3}
	if err := report.WriteJUnitFile(path, "lockchaos explore", nil, ExploreCases(rep)); err != nil {
		t.Fatal(err)
	}
	if f := readJUnitFile(t, path); f.Tests != 1 || f.Errors != 1 || exploreExit(rep) != ExitUnknown {
		t.Errorf("every schedule errored: %+v, exit %d: want unknown", f, exploreExit(rep))
	}
	// Or whose faults never took effect: nothing tested either; one passed
	// schedule among them is a tested one.
	rep.Classes = map[explore.Class]int{explore.Errored: 1, explore.Untried: 2}
	if exploreExit(rep) != ExitUnknown {
		t.Errorf("every schedule errored or untried: exit %d, want unknown", exploreExit(rep))
	}
	rep.Schedules, rep.Classes[explore.Passed] = 4, 1
	if exploreExit(rep) != ExitOK {
		t.Errorf("one schedule passed: exit %d, want 0", exploreExit(rep))
	}
}
