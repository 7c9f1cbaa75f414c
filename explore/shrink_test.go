package explore

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/history"
)

func bigSchedule() Schedule {
	s := Schedule{Topology: "single", TTL: 200 * time.Millisecond, Clients: 4, Keys: 2, Hold: 60 * time.Millisecond,
		Think: 10 * time.Millisecond, Resource: "counter", Faults: []Fault{
			{Spec: faults.Spec{Kind: history.FaultLatency, Target: "master", At: 200 * time.Millisecond,
				Params: map[string]string{history.ParamDirection: "both"}}, Mag: 0.5, MagField: MagLatency, Hold: 2.5},
			{Spec: faults.Spec{Kind: history.FaultPauseClient, Target: "holder", Point: history.PointBeforeRelease,
				At: 300 * time.Millisecond, Count: 2, Every: 700 * time.Millisecond, When: "any-client after-acquire"}, Mag: 2.5, MagField: MagDuration},
			{Spec: faults.Spec{Kind: history.FaultClockJump, Target: "master", At: 400 * time.Millisecond}, Mag: 1.5, MagField: MagDelta},
		}}
	FitDuration(&s, s.End())
	return s
}

// The fake oracle's bug: a pause before the release of at least 1.3×TTL
// with at least two clients.
func fakeBug(s Schedule) bool {
	if s.Clients < 2 {
		return false
	}
	for _, f := range s.Faults {
		if f.Spec.Kind == history.FaultPauseClient && f.Spec.Point == history.PointBeforeRelease && f.Mag >= 1.3 {
			return true
		}
	}
	return false
}

func TestShrinkFindsTheMinimalSchedule(t *testing.T) {
	s := bigSchedule()
	if _, err := s.Scenario("x"); err != nil {
		t.Fatal(err)
	}
	if !fakeBug(s) {
		t.Fatal("the big schedule must fail")
	}
	calls := 0
	var steps []Step
	m := Shrink(context.Background(), s, func(_ context.Context, c Schedule) (bool, error) {
		calls++
		return fakeBug(c), nil
	}, func(st Step) { steps = append(steps, st) })
	if len(m.Faults) != 1 || m.Faults[0].Spec.Kind != history.FaultPauseClient {
		t.Fatalf("minimal schedule: %s", m.Describe())
	}
	f := m.Faults[0]
	if f.Spec.Count > 1 || f.Spec.When != "" {
		t.Errorf("repeats or trigger kept: %s", f.Describe())
	}
	if m.Clients != 2 || m.Keys != 1 {
		t.Errorf("clients %d keys %d, want 2 and 1", m.Clients, m.Keys)
	}
	if f.Mag < 1.3 || f.Mag > 1.3+ShrinkPrecision {
		t.Errorf("magnitude %g, want the boundary 1.3+%g", f.Mag, ShrinkPrecision)
	}
	if m.Duration > s.Duration {
		t.Errorf("duration grew: %v > %v", m.Duration, s.Duration)
	}
	if _, err := m.Scenario("x"); err != nil {
		t.Errorf("minimal schedule does not validate: %v", err)
	}
	if calls != len(steps) || calls > 60 {
		t.Errorf("%d oracle calls, %d steps", calls, len(steps))
	}
	t.Logf("%d steps: %s", len(steps), m.Describe())
}

func TestShrinkToNoFaultWhenTheWorkloadAloneFails(t *testing.T) {
	m := Shrink(context.Background(), bigSchedule(), func(_ context.Context, c Schedule) (bool, error) {
		return c.Clients >= 2, nil
	}, nil)
	if len(m.Faults) != 0 || m.Clients != 2 {
		t.Fatalf("minimal: %s", m.Describe())
	}
}

func TestShrinkStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	m := Shrink(ctx, bigSchedule(), func(_ context.Context, c Schedule) (bool, error) {
		n++
		if n == 3 {
			cancel()
		}
		return fakeBug(c), nil
	}, nil)
	if n > 3 {
		t.Errorf("%d calls after cancel", n)
	}
	if !fakeBug(m) {
		t.Errorf("returned a schedule that does not fail: %s", m.Describe())
	}
}

func TestBisect(t *testing.T) {
	x, _ := Bisect(context.Background(), MinMag, MaxMag, func(m float64) (bool, []string) { return m >= 0.97, []string{"mutex"} })
	if math.Abs(x-0.97) > Precision {
		t.Errorf("boundary %g, want 0.97", x)
	}
	if x, _ := Bisect(context.Background(), MinMag, MaxMag, func(float64) (bool, []string) { return false, nil }); x != Never {
		t.Errorf("never failing: %g", x)
	}
	if x, _ := Bisect(context.Background(), MinMag, MaxMag, func(float64) (bool, []string) { return true, nil }); x != MinMag {
		t.Errorf("always failing: %g", x)
	}
}

func TestRepeatedKeepsTheScheduleValid(t *testing.T) {
	s := Schedule{Topology: "single", TTL: 200 * time.Millisecond, Clients: 2, Keys: 1, Resource: "counter", Faults: []Fault{
		{Spec: faults.Spec{Kind: history.FaultPauseClient, Target: "holder", Point: history.PointBeforeRelease, At: 150 * time.Millisecond}, Mag: 1.3, MagField: MagDuration},
	}}
	FitDuration(&s, s.End())
	r := Repeated(s)
	if _, err := r.Scenario("r"); err != nil {
		t.Fatal(err)
	}
	if r.Faults[0].Spec.Count < 3 || r.Duration != 3*time.Second {
		t.Errorf("not repeated: %s", r.Describe())
	}
	if s.Faults[0].Spec.Count != 0 {
		t.Error("Repeated changed its input")
	}
	g := Generator{Seed: 5, Topology: "single", TTL: 200 * time.Millisecond}
	for i := range 100 {
		s, _ := g.Generate(i)
		if _, err := Repeated(s).Scenario("r"); err != nil {
			t.Errorf("schedule %d repeated: %v (%s)", i, err, Repeated(s).Describe())
		}
	}
}
