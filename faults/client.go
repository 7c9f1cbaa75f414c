package faults

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// Helpers of the client-side faults (pause-client, crash-client,
// clock-skew, cut-client, stall-commands: a file each): they act through
// the workload's ClientControl.

func validPoint(p string) error {
	if p == "" || p == history.PointNow || slices.Contains(history.Points, p) {
		return nil
	}
	return fmt.Errorf("point: %q is not one of %s, %s", p, history.PointNow, strings.Join(history.Points, ", "))
}

// atPoint arms a point fault (pause, crash) through arm on the clients of
// s.Target, at s.Point (default now), and waits at most wait for one of them
// to reach it. The outcome names the client hit, or says why none was.
func atPoint(ctx context.Context, env *Env, s Spec, wait time.Duration, arm func(context.Context, []int, string) <-chan Hit) (Outcome, Hit) {
	cs, err := pointTargets(env, s.Target)
	if err != nil {
		return Outcome{Target: s.Target, Effect: map[string]string{history.EffectReason: err.Error()}}, Hit{}
	}
	point := cmp.Or(s.Point, history.PointNow)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	h, ok := <-arm(wctx, cs, point)
	out := Outcome{Effect: map[string]string{"point": point}}
	if ok {
		out.Target, out.Applied = fmt.Sprintf("client %d", h.Client), true
		return out, h
	}
	out.Target = "any client"
	if len(cs) == 1 {
		out.Target = fmt.Sprintf("client %d", cs[0])
	}
	out.Effect[history.EffectReason] = out.Target + " did not reach point " + point + " in time"
	return out, h
}

func ms(ns int64) string { return strconv.FormatFloat(history.MS(ns), 'f', 2, 64) }

// cutMode is params.mode of the kinds that cut a link: reset (default) or
// drop.
func cutMode(p map[string]string) (string, error) {
	switch m := p[history.ParamMode]; m {
	case "":
		return "reset", nil
	case "reset", "drop":
		return m, nil
	default:
		return "", fmt.Errorf("params.mode: %q is not reset or drop", m)
	}
}
