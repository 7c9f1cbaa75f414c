package lockimpl

import (
	"context"
	"errors"
)

// renew-timeout-ack renews like the correct watchdog (an owner-checked
// extension every renew_interval, a local deadline, Lost on a refusal)
// except for one line: an extension whose outcome is unknown (its EVAL timed
// out, its connection broke) counts as acknowledged. The deadline moves on
// although the server may never have extended the key, and a holder whose
// renewals time out works on after the key expired and the next owner
// acquired. A control: renewal-times-out must catch it.
func init() {
	Register(Info{
		Name:        "renew-timeout-ack",
		Kind:        Broken,
		Renews:      true,
		Description: "simple + an owner-checked extension every renew_interval whose timeout counts as acknowledged",
		Mistake: "an extension whose outcome is unknown (a timed-out EVAL, a broken connection) counts as acknowledged: " +
			"the deadline moves on while the key expires, so the holder works past the next owner's acquire",
	}, func(env Env) (Locker, error) {
		rs, err := newRenewingSimple(env)
		return &falseSuccess{rs, func(err error) bool { return IsIndeterminate(err) && !errors.Is(err, context.Canceled) }}, err
	})
}
