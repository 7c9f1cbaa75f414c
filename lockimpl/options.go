package lockimpl

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Options configure a lock. The zero value of every field means its default;
// YAML names (in a scenario's `lock:` block) are the snake_case of the field.
type Options struct {
	// TTL is the key's time to live set on acquire and on each renewal.
	// Default 500ms.
	TTL time.Duration `yaml:"ttl" json:"ttl"`
	// AcquireTimeout bounds how long Acquire waits for a held key.
	// Default 2×TTL.
	AcquireTimeout time.Duration `yaml:"acquire_timeout" json:"acquire_timeout"`
	// CommandTimeout bounds one round trip of a lock command; past it the
	// outcome is indeterminate. Default TTL/2, at most 1s.
	CommandTimeout time.Duration `yaml:"command_timeout" json:"command_timeout"`
	// Wait is how a blocked Acquire learns that the key was freed:
	// "pubsub" (woken by the releaser's PUBLISH, polling as fallback) or
	// "poll". Default "pubsub" where the lock supports it.
	Wait string `yaml:"wait" json:"wait"`
	// RetryDelay is the polling interval of a blocked Acquire (and the
	// fallback interval under pubsub). Default 10ms.
	RetryDelay time.Duration `yaml:"retry_delay" json:"retry_delay"`
	// RetryJitter is the random extra added to each retry delay, up to this
	// much. Default RetryDelay/2.
	RetryJitter time.Duration `yaml:"retry_jitter" json:"retry_jitter"`
	// Drift is redlock's clock drift factor: validity is reduced by
	// TTL×Drift + 2ms. Default 0.01.
	Drift float64 `yaml:"drift" json:"drift"`
	// SkipValidityCheck disables redlock's elapsed-time check after the
	// replies (step 3): only for the slow-acquire control. Default false.
	SkipValidityCheck bool `yaml:"skip_validity_check" json:"skip_validity_check"`
	// RenewInterval is the watchdog's renewal period. Default TTL/3.
	RenewInterval time.Duration `yaml:"renew_interval" json:"renew_interval"`
	// Replicas is the number of replicas simple-wait's WAIT must hear from.
	// Default 1.
	Replicas int `yaml:"replicas" json:"replicas"`
	// ReplicaTimeout is simple-wait's WAIT timeout. Default 100ms.
	ReplicaTimeout time.Duration `yaml:"replica_timeout" json:"replica_timeout"`
	// Extra holds implementation-specific settings (adapters), as strings.
	Extra map[string]string `yaml:"extra" json:"extra,omitempty"`
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.TTL == 0 {
		o.TTL = 500 * time.Millisecond
	}
	if o.AcquireTimeout == 0 {
		o.AcquireTimeout = 2 * o.TTL
	}
	if o.CommandTimeout == 0 {
		o.CommandTimeout = min(o.TTL/2, time.Second)
	}
	if o.Wait == "" {
		o.Wait = "pubsub"
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = 10 * time.Millisecond
	}
	if o.RetryJitter == 0 {
		o.RetryJitter = o.RetryDelay / 2
	}
	if o.Drift == 0 {
		o.Drift = 0.01
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = o.TTL / 3
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.ReplicaTimeout == 0 {
		o.ReplicaTimeout = 100 * time.Millisecond
	}
	return o
}

// RetryPause is one pause between two attempts of a blocked Acquire:
// RetryDelay plus a random part of RetryJitter, so waiters do not retry in
// lockstep.
func (o *Options) RetryPause() time.Duration {
	d := o.RetryDelay
	if o.RetryJitter > 0 {
		d += rand.N(o.RetryJitter)
	}
	return d
}

// Validate reports the first option that cannot work, naming it.
func (o Options) Validate() error {
	switch {
	case o.TTL < time.Millisecond:
		return fmt.Errorf("lock option ttl: %v is below 1ms", o.TTL)
	case o.AcquireTimeout < 0:
		return fmt.Errorf("lock option acquire_timeout: %v is negative", o.AcquireTimeout)
	case o.CommandTimeout < 0:
		return fmt.Errorf("lock option command_timeout: %v is negative", o.CommandTimeout)
	case o.Wait != "" && o.Wait != "pubsub" && o.Wait != "poll":
		return fmt.Errorf("lock option wait: %q is not one of pubsub, poll", o.Wait)
	case o.RetryDelay < 0:
		return fmt.Errorf("lock option retry_delay: %v is negative", o.RetryDelay)
	case o.Drift < 0 || o.Drift >= 1:
		return fmt.Errorf("lock option drift: %v is not in [0, 1)", o.Drift)
	case o.RenewInterval < 0:
		return fmt.Errorf("lock option renew_interval: %v is negative", o.RenewInterval)
	case o.Replicas < 0:
		return fmt.Errorf("lock option replicas: %d is negative", o.Replicas)
	}
	// A renewal interval must leave a renewal the time to land before the
	// Renewal declares the lease lost (RenewalGuard ahead of the deadline).
	// At a TTL of 1ms no interval can: only renewing locks are affected,
	// and they are lost at once, which a run shows.
	if o.RenewInterval > 0 && o.TTL > RenewalGuard(o.TTL) {
		if err := checkRenewInterval("lock option renew_interval", o.TTL, o.RenewInterval); err != nil {
			return err
		}
	}
	return nil
}
