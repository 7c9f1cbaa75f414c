package explore

import "testing"

func run(tried bool, checks ...string) RunResult {
	r := RunResult{Tried: tried, Checks: map[string]string{"mutex": "valid", "unlock": "valid"}}
	for _, c := range checks {
		r.Checks[c] = "invalid"
	}
	return r
}

func TestFindingRule(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lock, ref []RunResult
		want      Class
	}{
		{"lock fails, reference passes every seed", []RunResult{run(true, "unlock"), run(true)}, []RunResult{run(true), run(true)}, Finding},
		{"reference fails too: a limit", []RunResult{run(true, "mutex")}, []RunResult{run(true), run(true, "mutex")}, Limit},
		{"reference's faults did not take effect", []RunResult{run(true, "mutex")}, []RunResult{run(true), run(false)}, Untried},
		{"lock's faults did not take effect, no failure", []RunResult{run(false), run(false)}, nil, Untried},
		{"lock passes", []RunResult{run(true), run(false)}, nil, Passed},
		{"failure with untried lock faults still counts", []RunResult{run(false, "mutex")}, []RunResult{run(true)}, Finding},
		{"reference run broke", []RunResult{run(true, "mutex")}, []RunResult{{Err: errTest}}, Untried},
	} {
		got, vs := Classify(tc.lock, tc.ref)
		if got != tc.want {
			t.Errorf("%s: %s, want %s (%+v)", tc.name, got, tc.want, vs)
		}
	}
	_, vs := Classify([]RunResult{run(true, "unlock"), run(true)}, []RunResult{run(true), run(true)})
	for _, v := range vs {
		if v.Check == "unlock" && (v.Lock.Fails != 1 || v.Lock.N != 2 || v.Ref.Fails != 0 || v.Ref.N != 2 || v.Ref.High <= 0 || v.Lock.Low <= 0) {
			t.Errorf("rates: %+v", v)
		}
	}
}

type testErr struct{}

func (testErr) Error() string { return "broken" }

var errTest = testErr{}
