package checker

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// sentenceGap matches what a template that left a slot empty prints: two
// spaces, a space before punctuation, empty brackets, doubled punctuation,
// a fmt error, a lease that did nothing ("lease on k0 while it was paused",
// issue 40), a clause with no time ("at ;").
var sentenceGap = regexp.MustCompile(`  | [,;.:)]|\( |\(\)|,,|;;|[;,:]\.|%!|<nil>|\blease on \S+ while\b|\b(at|since|until)[ ]?[;,.)]|^\s|\s$`)

// sentenceGaps returns the slots s left empty ("" when none), for an
// explanation or a detail.
func sentenceGaps(s string) []string {
	if s == "" {
		return []string{"empty"}
	}
	return sentenceGap.FindAllString(s, -1)
}

// checkSentences fails t for each violation of r whose explanation or
// detail has an empty slot: every test that judges verdicts checks the
// sentences of what it found (wantVerdicts).
func checkSentences(t *testing.T, r *Result) {
	t.Helper()
	for _, v := range r.Violations {
		for _, s := range []string{v.Explanation, v.Detail} {
			if g := sentenceGaps(s); s != "" && len(g) > 0 {
				t.Errorf("%s violation (%s) has empty slots %q: %q", v.Check, v.Cause, g, s)
			}
		}
	}
	for _, in := range r.Incidents {
		if g := sentenceGaps(in.Sentence); in.Sentence != "" && len(g) > 0 {
			t.Errorf("incident (%s) has empty slots %q: %q", in.Cause, g, in.Sentence)
		}
	}
}

func TestSentenceGaps(t *testing.T) {
	for s, bad := range map[string]bool{
		"client 2's lease on k0 expired at 1.535 s while it was paused (1.134 s–1.535 s); client 1 acquired at 1.2 s.": false,
		"client 2's lease on k0 while it was paused (1.134 s–1.535 s); client 1 acquired at 1.2 s.":                    true,
		"client 1 acquired k at  while client 0 held it.":                                                              true,
		"the node failed over at 0.5 s; the promoted replica ( ) did not have it.":                                     true,
		"client 0's key expired at ; client 1 acquired it.":                                                            true,
		"its commands were delayed by %!s(MISSING).":                                                                   true,
		"quorum of 2 of 5: client 0 held n1,n2 while client 1 held n3,n4,n5 (per the command record).":                 false,
		"": true,
	} {
		if got := len(sentenceGaps(s)) > 0; got != bad {
			t.Errorf("sentenceGaps(%q) = %q, want gaps %v", s, sentenceGaps(s), bad)
		}
	}
}

// causeModel is the model of a history in which client 1 holds k from 11
// ms (acquire invoked at 10) and client 2 acquires it at 151 ms (invoked
// at 100), with setup's events (faults, pauses, server events).
func causeModel(setup func(b *hb)) *model {
	b := newHB(nil)
	b.acq(1, 10, 11, 0, history.OK, 1).acq(2, 100, 151, 0, history.OK, 1)
	if setup != nil {
		setup(b)
	}
	m := newModel()
	for i := range b.ev {
		m.add(&b.ev[i])
	}
	m.final = true
	m.prepare(Options{})
	return m
}

// fault adds fault id of kind aimed at target, from t to heal ms (heal 0:
// none recorded).
func (b *hb) fault(id int, kind, target string, t, heal int64, req, eff map[string]string) *hb {
	b.add(history.Event{T: t * ms, End: (t + 1) * ms, Client: -1, Op: history.OpFault, Node: "n1",
		Fault: &history.Fault{ID: id, Kind: kind, Target: target, Request: req, Effect: eff, Applied: true}})
	if heal > 0 {
		b.add(history.Event{T: heal * ms, End: (heal + 1) * ms, Client: -1, Op: history.OpHeal, Fault: &history.Fault{ID: id, Kind: kind, Applied: true}})
	}
	return b
}

func (b *hb) pause(c int, t0, t1 int64, point string) *hb {
	return b.add(history.Event{T: t0 * ms, End: t1 * ms, Client: c, Key: "k", Op: history.OpPause, Detail: point})
}

// Every cause's sentence is whole (issue 40: "client 2's lease on k0 while
// it was paused (1.134 s–1.535 s)", its expiry missing): each of cause's
// templates, built for every case that picks it and with and without a
// deadline and acts after it, has no empty slot (sentenceGaps); each
// fence template too; the causes other checks give come from histories
// here, or from the named test, whose violations wantVerdicts checks the
// same way. A cause with neither fails.
func TestEveryCauseSentenceIsWhole(t *testing.T) {
	seen := map[string]int{}
	note := func(name, cause, expl string) {
		seen[cause]++
		if g := sentenceGaps(expl); len(g) > 0 {
			t.Errorf("%s: %s has empty slots %q: %q", name, cause, g, expl)
		}
	}
	noteAs := func(name string) func(cause, expl string) {
		return func(cause, expl string) { note(name, cause, expl) }
	}
	nm := map[string]string{history.EffectNewMaster: "n2"}
	cases := []struct {
		name  string
		setup func(b *hb)
		hold  func(a, b *hold)
		want  string
	}{
		{"isolate-node before the acquire", func(b *hb) { b.fault(1, history.FaultIsolateNode, "node n1", 5, 300, nil, nm) }, nil, CauseMinorityMaster},
		{"isolate-node after it", func(b *hb) { b.fault(1, history.FaultIsolateNode, "node n1", 50, 300, nil, nil) }, nil, CauseFailover},
		{"failover", func(b *hb) { b.fault(1, history.FaultFailover, "node n1", 50, 300, nil, nm) }, nil, CauseFailover},
		{"restart-node", func(b *hb) { b.fault(1, history.FaultRestartNode, "node n1", 50, 60, nil, nil) }, nil, CauseEmptyRestart},
		{"kill-node", func(b *hb) { b.fault(1, history.FaultKillNode, "node n1", 50, 60, nil, nil) }, nil, CauseEmptyRestart},
		{"clock-jump", func(b *hb) {
			b.fault(1, history.FaultClockJump, "node n1", 50, 60, map[string]string{"delta": "500ms"}, nil)
		}, nil, CauseClockJump},
		{"clock-drift", func(b *hb) {
			b.fault(1, history.FaultClockDrift, "node n1", 50, 300, map[string]string{"rate": "3"}, nil)
		}, nil, CauseClockDrift},
		{"pause before the release", func(b *hb) { b.pause(1, 20, 200, history.PointBeforeRelease) }, nil, CausePause},
		{"pause, expiry seen", func(b *hb) { b.pause(1, 20, 200, history.PointBeforeRelease).srv(111, "expired") }, nil, CausePause},
		{"pause inside the later acquire", func(b *hb) { b.pause(2, 110, 150, history.PointInAcquire) }, nil, CausePause},
		{"pause-node", func(b *hb) { b.fault(1, history.FaultPauseNode, "node n1", 50, 140, nil, nil).srv(140, "expired") }, nil, CausePause},
		{"renewals failed", nil, func(a, _ *hold) { a.renewBad = 2 }, CauseRenewalFailed},
		{"cut-client", func(b *hb) { b.fault(1, history.FaultCutClient, "client 1", 50, 300, nil, nil) }, nil, CausePartitioned},
		{"partition", func(b *hb) {
			b.fault(1, history.FaultPartition, "node n1", 50, 140, map[string]string{history.ParamDirection: "both"}, nil).srv(111, "expired")
		}, nil, CausePartitioned},
		{"stall-commands", func(b *hb) {
			b.fault(1, history.FaultStallCommands, "client 1", 50, 300, map[string]string{"delay": "200ms"}, nil)
		}, nil, CauseStalled},
		{"clock-skew rate", func(b *hb) {
			b.fault(1, history.FaultClockSkew, "client 1", 50, 300, map[string]string{"rate": "0.5"}, nil)
		}, nil, CauseClockSkew},
		{"expired while held", func(b *hb) { b.srv(111, "expired") }, nil, CauseExpired},
		{"lease arrived expired, renewals failed", nil, func(a, _ *hold) { a.lateDeadline, a.deadline, a.renewBad = 5*ms, 5*ms, 1 }, CauseExpiredOnArrival},
		{"later lease arrived expired", nil, func(_, b *hold) { b.lateDeadline, b.deadline, b.actAfter = 120*ms, 120*ms, 160*ms }, CauseExpiredOnArrival},
		{"nothing", nil, nil, CauseUnknown},
	}
	for _, c := range cases {
		for _, v := range []struct {
			name              string
			deadline, actedAt int64
		}{{"no deadline", 0, 0}, {"deadline", 111 * ms, 0}, {"acted after it", 111 * ms, 160 * ms}} {
			m := causeModel(c.setup)
			a, b := &m.holds[0], &m.holds[1]
			if a.lateDeadline == 0 {
				a.deadline, a.actAfter = max(a.deadline, v.deadline), v.actedAt
			}
			if c.hold != nil {
				c.hold(a, b)
			}
			cause, expl := m.cause(0, 0, 1)
			note(c.name+", "+v.name, cause, expl)
			if v.name == "no deadline" && cause != c.want {
				t.Errorf("%s: cause %s, want %s: %s", c.name, cause, c.want, expl)
			}
		}
	}
	// A deleting release of another client's.
	m := causeModel(nil)
	m.kd[0].badDels = append(m.kd[0].badDels, badDel{t: 120 * ms, release: true, victim: 0, culprit: 2})
	noteAs("non-owner del")(m.cause(0, 0, 1))

	// The fence templates: hold 1's fence 1 after hold 0's 2.
	fence := func(setup func(b *hb), rec bool) (string, string) {
		m := causeModel(setup)
		m.holds[0].fence, m.holds[1].fence = 2, 1
		if rec {
			m.cmdOn, m.cmdSeen = true, true
		}
		return m.fenceOrderCause(0, 1, 0)
	}
	noteAs("fence across isolate-node")(fence(func(b *hb) { b.fault(1, history.FaultIsolateNode, "node n1", 5, 300, nil, nil) }, false))
	noteAs("fence across failover")(fence(func(b *hb) { b.fault(1, history.FaultFailover, "node n1", 50, 300, nil, nil) }, false))
	noteAs("fence across restart-node")(fence(func(b *hb) { b.fault(1, history.FaultRestartNode, "node n1", 50, 60, nil, nil) }, false))
	noteAs("fence without a record")(fence(nil, false))
	noteAs("fence, no INCR in the record")(fence(nil, true))
	noteAs("fence, an INCR in the record")(fence(func(b *hb) { b.cmd(2, 140, []string{"INCR", "{k}:fence"}) }, true))

	// Histories for the other checks' causes.
	for name, b := range map[string]*hb{
		"fence issued late":    incrAfterSet(),
		"gc pause":             gcPause(false),
		"write without a hold": newHB(nil).read(0, 2, 0).cycle(1, 5, 1).write(0, 20, 21, 1, 0, true),
		"key never freed": func() *hb {
			b := newHB(nil).cycle(0, 0, 1).acq(0, 20, 21, 0, history.Unknown, 1)
			for t := int64(30); t < 600; t += 100 {
				b.acq(1, t, t+100, 0, history.Fail, 1)
			}
			return b
		}(),
		"no recovery after the heal": func() *hb {
			b := newHB(nil).cycle(0, 0, 1).fault(1, history.FaultPauseNode, "node n1", 20, 100, nil, nil)
			for t := int64(30); t < 600; t += 100 {
				b.acq(1, t, t+100, 0, history.Fail, 1)
			}
			return b
		}(),
		"crash without a point": func() *hb {
			b := newHB(nil).acq(0, 0, 1, 0, history.OK, 1).fault(1, history.FaultCrashClient, "client 0", 20, 0, nil, map[string]string{history.EffectCrashedAt: "20.00"})
			for t := int64(5); t < 600; t += 100 {
				b.acq(1, t, t+100, 0, history.Fail, 1)
			}
			return b
		}(),
	} {
		r := Check(b.ev, Options{})
		for _, v := range r.Violations {
			note(name+" ("+v.Check+")", v.Cause, v.Explanation)
			note(name+" ("+v.Check+" detail)", v.Cause, v.Detail)
		}
	}
	// Told in the named test, whose violations wantVerdicts or causesOf
	// check.
	byTest := map[string]string{
		CauseRenewalOverwrote:  "TestLateBlindRenewalOverwritesOwner",
		CauseExtendedForeign:   "TestForeignExtensionIsNamed",
		CauseMinorityQuorum:    "TestOwnCauseMinorityQuorum",
		CauseForeignReentry:    "TestOwnCauseForeignReentry",
		CauseFreedAboveZero:    "TestOwnCauseFreedAboveZero",
		CauseNotGranted:        "TestAcquireNotGranted",
		CauseLocalReentry:      "TestReentryAfterExpiry",
		CauseReleasedLevelKept: "TestReleasedLevelKept",
		CauseFailedAcquireKept: "TestFailedAcquireLevelKept",
		// The stranded keys' causes, each built there.
		CauseRenewedAfterRelease:       "TestStrandedKeys",
		CauseKeyWithoutTTL:             "TestStrandedKeys",
		CauseReleaseNotApplied:         "TestStrandedKeys",
		CauseRenewedAfterFailedAcquire: "TestStrandedKeys",
	}
	src := testSources(t)
	for cause, test := range byTest {
		if !strings.Contains(src, "func "+test+"(t *testing.T)") {
			t.Errorf("%s: the test %s that tells it is gone", cause, test)
		}
	}
	for name, v := range causeConstants(t, ".") {
		if seen[v] == 0 && byTest[v] == "" {
			t.Errorf("%s (%s): no sentence of it is built here, nor named by a test", name, v)
		}
	}
}

// testSources is the package's test files, concatenated.
func testSources(t *testing.T) string {
	t.Helper()
	fs, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fs {
		s, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(s)
	}
	return b.String()
}
