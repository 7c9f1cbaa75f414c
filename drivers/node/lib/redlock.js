'use strict';
// node-redlock (redlock v5, mike-marcacci) and @sesamecare-oss/redlock (its
// maintained fork): one driver for both, they share the API and the scripts.
//
// auto_extend=true (default): each hold is a redlock.using() whose routine
// runs until release; the library extends the lease in the background and
// aborts its signal when it cannot (pushed as "lost"). The driver wraps the
// instance's extend() to push each renewal and its outcome.
// auto_extend=false: plain acquire / extend / release.
//
// Outcomes. A failed operation is an ExecutionError whose attempts resolve
// to per-attempt votes: a vote against is a ResourceLockedError (the server
// ran the script and refused) or an error (a timeout, a broken connection:
// the outcome on that server is unknown). An attempt is a definite refusal
// when the refusals alone reach the quorum, so no quorum can have said yes;
// otherwise it is indeterminate.
const { mono, wallToMono, boolOpt, intOpt, sleep, leaseOf } = require('./proto');
const { definiteNo } = require('./clients');

// The settings key under which usingOnce passes its box to acquire.
const TAKEN = Symbol('lockchaos.taken');

const OPTIONS = ['version', 'auto_extend', 'renew_interval_ms', 'retry', 'retry_jitter_ms', 'drift_factor', 'offline_queue'];

function describe(opts) {
  const auto = boolOpt(opts.auto_extend, true);
  return {
    capabilities: auto ? ['renews', 'multi-node'] : ['multi-node'],
    reports: auto ? ['deadline', 'lost', 'renewals'] : ['deadline'],
  };
}

class RedlockLock {
  constructor(lib, clients, init, opts, push) {
    const Redlock = lib.Redlock || lib.default || lib;
    const o = init.options || {};
    this.push = push;
    this.auto = boolOpt(opts.auto_extend, true);
    this.renewMs = intOpt(opts.renew_interval_ms, o.renew_interval_ms || 0);
    this.retryDelay = Math.max(0, o.retry_delay_ms ?? 10);
    this.jitter = intOpt(opts.retry_jitter_ms, Math.floor(this.retryDelay / 2));
    // retryCount 0: the library makes one attempt per call. Its own retry
    // loop counts attempts, not time, and under a link delay overruns
    // wait_ms many times over; the driver retries until wait_ms instead.
    // retry=library: one call with retryCount wait_ms / retry_delay_ms (one
    // value across the attempts, the cleanup only at the end), unbounded
    // in time as the library is.
    this.libraryRetry = (opts.retry || 'driver') === 'library';
    if (!['driver', 'library'].includes(opts.retry || 'driver')) throw new Error(`retry=${opts.retry}: want driver or library`);
    this.redlock = new Redlock(clients, {
      retryCount: 0,
      retryDelay: this.retryDelay,
      retryJitter: this.jitter,
      driftFactor: opts.drift_factor !== undefined ? Number(opts.drift_factor) : 0.01,
    });
    this.leases = new Map(); // lease id -> {id, lock, finish, done}
    this.byValue = new Map(); // lock value -> lease
    this.n = 0;
    if (this.auto) this.wrapForUsing();
  }

  // wrapForUsing overrides this instance's acquire (to see the Lock that
  // using() takes, which redlock v5 does not hand to the routine) and
  // extend (to push each renewal the library makes). The Lock goes to the
  // box that usingOnce put in the settings (using() hands its settings to
  // acquire), so calls that overlap (one a cancel abandoned, the next one)
  // each see their own.
  wrapForUsing() {
    const rl = this.redlock;
    const acquire = rl.acquire.bind(rl);
    const extend = rl.extend.bind(rl);
    rl.acquire = async (resources, duration, settings, ...rest) => {
      const lock = await acquire(resources, duration, settings, ...rest);
      const box = settings && settings[TAKEN];
      if (box) box.lock = lock;
      return lock;
    };
    rl.extend = async (existing, ...args) => {
      const lease = this.byValue.get(existing.value);
      const t0 = mono();
      try {
        const lock = await extend(existing, ...args);
        const t1 = mono();
        if (lease) {
          lease.lock = lock;
          this.push({ type: 'renewal', lease: lease.id, t0, t1, outcome: 'ok', deadline_ns: wallToMono(lock.expiration) });
        }
        return lock;
      } catch (e) {
        const t1 = mono();
        if (lease) {
          // Classified without holding up the library's retry.
          this.classify(e).then((c) => this.push({
            type: 'renewal', lease: lease.id, t0, t1,
            outcome: c.kind === 'refused' ? 'not_owner' : 'indeterminate', error: c.error,
          }));
        }
        throw e;
      }
    };
  }

  // classify: {kind: 'refused' | 'indeterminate' | 'error', error}.
  async classify(e) {
    if (!e || e.name !== 'ExecutionError') return { kind: 'error', error: String(e && e.message || e) };
    if (!e.attempts || e.attempts.length === 0) return { kind: 'refused', error: e.message }; // expired locally
    const stats = await Promise.all(e.attempts);
    for (const s of stats) {
      let refused = 0;
      let unknown = null;
      for (const err of s.votesAgainst.values()) {
        if (err.name === 'ResourceLockedError' || definiteNo(err)) refused++;
        else unknown = unknown || err;
      }
      const answeredYes = s.votesFor.size;
      if (refused < s.quorumSize && answeredYes < s.quorumSize) {
        return { kind: 'indeterminate', error: unknown ? unknown.message : 'no quorum either way' };
      }
    }
    return { kind: 'refused', error: e.message };
  }

  newLease(lock) {
    const lease = { id: `L${++this.n}`, lock };
    this.leases.set(lease.id, lease);
    this.byValue.set(lock.value, lease);
    return lease;
  }

  dropLease(lease) {
    this.leases.delete(lease.id);
    if (this.byValue.get(lease.lock.value) === lease) this.byValue.delete(lease.lock.value);
  }

  // forget ends a lease on the driver's side only, as an application that
  // gave up the call does (a cancelled acquire that won after all, a
  // release cancelled before it started): nothing is sent, the key stays
  // until its TTL, or as long as using() goes on extending it; no renewal
  // or lost is pushed for it any more.
  forget(id) {
    const lease = this.leases.get(id);
    if (!lease) return;
    this.dropLease(lease);
    lease.forgotten = true;
  }

  // One attempt through using(): resolves with the lease once the routine
  // runs (the lock is held), rejects with using()'s error otherwise.
  usingOnce(key, ttl, retryCount) {
    let threshold = ttl - (this.renewMs > 0 ? this.renewMs : Math.floor(ttl / 3));
    threshold = Math.min(threshold, ttl - 100); // using() refuses more
    const box = {};
    const settings = { retryCount, automaticExtensionThreshold: threshold, [TAKEN]: box };
    return new Promise((resolve, reject) => {
      let started = false;
      box.done = this.redlock.using([key], ttl, settings, (signal) => {
        // Runs after using() awaited its acquire, so box.done and box.lock are set.
        started = true;
        const lease = this.newLease(box.lock);
        lease.done = box.done;
        signal.addEventListener('abort', () => {
          if (lease.forgotten) return;
          this.push({ type: 'lost', lease: lease.id, t: mono(), reason: signal.error ? signal.error.message : 'aborted' });
        });
        return new Promise((finish) => {
          lease.finish = finish;
          resolve(lease);
        });
      });
      box.done.catch((e) => { if (!started) reject(e); });
    });
  }

  async acquire(req) {
    const ttl = req.ttl_ms;
    const wait = req.wait_ms || 0;
    const t0 = mono();
    const end = t0 + wait * 1e6;
    const retryCount = this.libraryRetry && wait > 0 ? Math.max(1, Math.floor(wait / Math.max(1, this.retryDelay))) : 0;
    for (;;) {
      try {
        let lease;
        if (this.auto) {
          lease = await this.usingOnce(req.key, ttl, retryCount);
        } else {
          lease = this.newLease(await this.redlock.acquire([req.key], ttl, { retryCount }));
        }
        const t1 = mono();
        return { type: 'acquired', lease: lease.id, token: lease.lock.value, depth: 1, deadline_ns: wallToMono(lease.lock.expiration), t0, t1 };
      } catch (e) {
        const c = await this.classify(e);
        if (c.kind !== 'refused') return { type: c.kind, error: c.error, t0, t1: mono() };
        const left = (end - mono()) / 1e6;
        if (wait === 0 || left <= 0 || this.libraryRetry) return { type: 'not_acquired', t0, t1: mono() };
        const d = Math.max(0, this.retryDelay + Math.floor((Math.random() * 2 - 1) * this.jitter));
        await sleep(Math.min(d, left));
        if (mono() >= end) return { type: 'not_acquired', t0, t1: mono() };
      }
    }
  }

  async release(req) {
    const lease = leaseOf(this.leases, req.lease);
    this.dropLease(lease);
    const t0 = mono();
    try {
      if (this.auto) {
        lease.finish();
        await lease.done;
      } else {
        await this.redlock.release(lease.lock, { retryCount: 0 });
      }
      return { type: 'released', t0, t1: mono() };
    } catch (e) {
      const t1 = mono();
      const c = await this.classify(e);
      return c.kind === 'refused' ? { type: 'not_owner', error: c.error, t0, t1 } : { type: c.kind, error: c.error, t0, t1 };
    }
  }

  async extend(req) {
    if (this.auto) return { type: 'error', error: 'unsupported: auto_extend=true renews in the background (using); extend needs auto_extend=false' };
    const lease = leaseOf(this.leases, req.lease);
    const t0 = mono();
    try {
      lease.lock = await this.redlock.extend(lease.lock, req.ttl_ms, { retryCount: 0 });
      const t1 = mono();
      return { type: 'extended', deadline_ns: wallToMono(lease.lock.expiration), t0, t1 };
    } catch (e) {
      const t1 = mono();
      const c = await this.classify(e);
      return c.kind === 'refused' ? { type: 'not_owner', error: c.error, t0, t1 } : { type: c.kind, error: c.error, t0, t1 };
    }
  }
}

function spec(name, pkg) {
  return {
    name, pkg, options: OPTIONS, describe,
    create: (lib, clients, init, opts, push) => new RedlockLock(lib, clients, init, opts, push),
  };
}

module.exports = {
  nodeRedlock: spec('node-redlock', 'redlock'),
  sesamecareRedlock: spec('sesamecare-redlock', '@sesamecare-oss/redlock'),
};
