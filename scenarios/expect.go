package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Want is one check's expectation. In YAML it is either a verdict
// (`mutex: invalid`: that verdict on every seed) or a rate with its reason
// (`mutex: {invalid: ">=0.8", why: "..."}`: that verdict on at least 80% of
// the seeds). A rate must say why the verdict is not every seed's, so that
// a flaky cell cannot be waved through without an explanation in the file.
type Want struct {
	// Verdict is valid | invalid | unknown | any.
	Verdict string
	// Rate is the least share of seeds (0 < Rate < 1) on which the check
	// has Verdict; 0 means every seed.
	Rate float64
	// Why justifies a rate (required with one).
	Why string

	problem string // a YAML shape error, reported by validate with the field
}

var verdicts = map[string]bool{"valid": true, "invalid": true, "unknown": true, "any": true}

// UnmarshalYAML reads either form; shape errors are kept for validate,
// which names the field.
func (w *Want) UnmarshalYAML(n *yaml.Node) error {
	*w = Want{}
	switch n.Kind {
	case yaml.ScalarNode:
		w.Verdict = n.Value
	case yaml.MappingNode:
		var rate string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case v.Kind != yaml.ScalarNode:
				w.problem = fmt.Sprintf(".%s: must be a string", k.Value)
			case k.Value == "why":
				w.Why = strings.TrimSpace(v.Value)
			case w.Verdict != "":
				w.problem = fmt.Sprintf(".%s: a rate expectation names one verdict (already %s)", k.Value, w.Verdict)
			default:
				w.Verdict, rate = k.Value, v.Value
			}
			if w.problem != "" {
				return nil
			}
		}
		if w.Verdict == "" {
			w.problem = `: a rate expectation needs a verdict and a rate, e.g. {invalid: ">=0.8", why: "..."}`
			return nil
		}
		r, err := parseRate(rate)
		if err != nil {
			w.problem = fmt.Sprintf(".%s: %v", w.Verdict, err)
			return nil
		}
		w.Rate = r
		if w.Rate == 0 {
			w.problem = fmt.Sprintf(".%s: %q: a rate must be in (0, 1); the plain form `%s` means every seed", w.Verdict, rate, w.Verdict)
		}
	default:
		w.problem = `: must be a verdict (valid, invalid, unknown, any) or a rate {invalid: ">=0.8", why: "..."}`
	}
	return nil
}

// MarshalYAML writes the form it was read in (run directories keep the
// scenario, and `check DIR` reads it back).
func (w Want) MarshalYAML() (any, error) {
	if w.Rate == 0 {
		return w.Verdict, nil
	}
	return &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: w.Verdict}, {Kind: yaml.ScalarNode, Value: ">=" + fmtRate(w.Rate)},
		{Kind: yaml.ScalarNode, Value: "why"}, {Kind: yaml.ScalarNode, Value: w.Why},
	}}, nil
}

// parseRate reads ">=F" with 0 < F < 1 (a percentage "80%" too).
func parseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, ">=") {
		return 0, fmt.Errorf("%q: a rate reads \">=F\" (the least share of seeds, 0 < F < 1)", s)
	}
	t = strings.TrimSpace(strings.TrimPrefix(t, ">="))
	pct := strings.HasSuffix(t, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %q is not a number", s, t)
	}
	if pct {
		f /= 100
	}
	if f <= 0 || f > 1 {
		return 0, fmt.Errorf("%q: %v is not in (0, 1]", s, f)
	}
	if f == 1 {
		return 0, nil
	}
	return f, nil
}

func fmtRate(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func (w Want) validate() error {
	if w.problem != "" {
		return fmt.Errorf("%s", w.problem)
	}
	if !verdicts[w.Verdict] {
		if w.Rate > 0 {
			return fmt.Errorf(".%s: %q is not one of valid, invalid, unknown", w.Verdict, w.Verdict)
		}
		return fmt.Errorf(": %q is not one of valid, invalid, unknown, any", w.Verdict)
	}
	if w.Rate > 0 && w.Verdict == "any" {
		return fmt.Errorf(".any: a rate of any verdict says nothing; write `any`")
	}
	if w.Rate > 0 && w.Why == "" {
		return fmt.Errorf(".why: a rate expectation (%s) must say why the verdict is not on every seed", w)
	}
	if w.Rate == 0 && w.Why != "" {
		return fmt.Errorf(".why: only a rate expectation takes a why")
	}
	return nil
}

// String is the verdict, or "invalid >=0.8" for a rate.
func (w Want) String() string {
	if w.Rate == 0 {
		return w.Verdict
	}
	return w.Verdict + " >=" + fmtRate(w.Rate)
}

// ParseWant reads the String form back.
func ParseWant(s string) (Want, error) {
	v, rate, ok := strings.Cut(s, " ")
	w := Want{Verdict: v}
	if ok {
		r, err := parseRate(rate)
		if err != nil {
			return w, err
		}
		w.Rate = r
	}
	if !verdicts[w.Verdict] {
		return w, fmt.Errorf("%q is not one of valid, invalid, unknown, any", w.Verdict)
	}
	return w, nil
}

// Met says whether hits of n seeds meet the expectation for its verdict.
func (w Want) Met(hits, n int) bool {
	if w.Verdict == "any" {
		return true
	}
	if w.Rate == 0 {
		return hits == n
	}
	// Compare counts, not floats: 8 of 10 meets ">=0.8".
	return float64(hits) >= w.Rate*float64(n)-1e-9
}
