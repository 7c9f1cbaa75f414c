'use strict';
// node-redlock (redlock v5, mike-marcacci) and @sesamecare-oss/redlock (its
// maintained fork): one driver for both, they share the API and the scripts.
//
// API modes (the lock option api; docs/driver-protocol.md "API modes"):
//   using           (default, the README's first idiom) each hold is
//                   redlock.using([key], ttl, settings, async (signal) => …),
//                   whose routine runs until release: the library's own
//                   retry loop, its automatic extension, the signal aborted
//                   when an extension fails (pushed as "lost").
//   acquire-extend  the README's second idiom, `let lock = await
//                   redlock.acquire([key], ttl); try { … lock = await
//                   lock.extend(ttl) … } finally { await lock.release() }`,
//                   the extend on the application's timer (renewals pushed;
//                   a failed extend pushes "lost" and ends the timer).
//   acquire         the same without the extend: capabilities [multi-node],
//                   reports [deadline]. A lock of another kind, so hello
//                   offers it alone (apis [acquire]) under a name of its own
//                   (<lock>-acquire), and a lock file of the renewing kind
//                   cannot list it (drivers/node/README.md).
// auto_extend (older) chooses between using (true) and acquire (false)
// when api is not given; given both, they must agree.
//
// The library's defaults (driftFactor 0.01, retryCount 10, retryDelay 200,
// retryJitter 100, automaticExtensionThreshold 500) except: the TTL is the
// request's; wait_ms 0 is retryCount 0 (one attempt); a wait is bounded by
// racing the library's call against a timer of wait_ms; using()'s threshold
// is lowered to ttl - 100 where using() refuses 500 (a TTL under 600 ms).
// retry_count, retry_delay_ms, retry_jitter_ms, drift_factor and
// renew_interval_ms override; retry=driver is the configuration from before
// the modes (one attempt per call, the driver retrying every retry_delay_ms
// until wait_ms, the scenario's renew interval).
//
// Outcomes. A failed operation is an ExecutionError whose attempts resolve
// to per-attempt votes: a vote against is a ResourceLockedError (the server
// ran the script and refused) or an error (a timeout, a broken connection:
// the outcome on that server is unknown). An attempt is a definite refusal
// when the refusals alone reach the quorum, so no quorum can have said yes;
// otherwise it is indeterminate.
const { AsyncLocalStorage } = require('node:async_hooks');
const { mono, wallToMono, boolOpt, intOpt, sleep, leaseOf, log } = require('./proto');
const { definiteNo } = require('./clients');
const { openScope, race, thrownOf } = require('./scope');

// The settings key under which a using() call passes its box to acquire.
const TAKEN = Symbol('lockchaos.taken');

const OPTIONS = ['version', 'api', 'auto_extend', 'renew_interval_ms', 'retry', 'retry_count', 'retry_delay_ms', 'retry_jitter_ms', 'drift_factor', 'offline_queue'];
const RENEWING = ['using', 'acquire-extend']; // capabilities [renews, multi-node]
const PLAIN = ['acquire']; // capabilities [multi-node]
const APIS = [...RENEWING, ...PLAIN];
// The library's defaults (redlock 5.0.0-beta.2 and @sesamecare-oss/redlock 1.4.0 alike).
const LIBRARY = { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 100, automaticExtensionThreshold: 500 };

const given = (v) => v !== undefined && v !== null && v !== '';

// apiOf: the API mode the options choose. An unknown one is returned as
// it is (hello answers with the default's capabilities; init refuses it).
function apiOf(opts) {
  const auto = given(opts.auto_extend) ? boolOpt(opts.auto_extend, true) : undefined;
  const api = given(opts.api) ? String(opts.api) : '';
  if (!api) return auto === false ? 'acquire' : 'using';
  if (APIS.includes(api) && auto !== undefined && auto !== RENEWING.includes(api)) {
    throw new Error(`api=${api} and auto_extend=${opts.auto_extend} disagree (api ${api} ${RENEWING.includes(api) ? 'extends the lease' : 'does not extend it'}); api alone chooses the mode`);
  }
  return api;
}

function retryOf(opts) {
  const r = given(opts.retry) ? String(opts.retry) : 'library';
  if (!['driver', 'library'].includes(r)) throw new Error(`retry=${opts.retry}: want library (the default: the library's own retries, bounded by wait_ms) or driver`);
  return r;
}

function describe(opts) {
  const renews = !PLAIN.includes(apiOf(opts));
  retryOf(opts);
  return {
    capabilities: renews ? ['renews', 'multi-node'] : ['multi-node'],
    reports: renews ? ['deadline', 'lost', 'renewals'] : ['deadline'],
    // The modes of this kind: a lock file lists them (explore draws among
    // them expecting the same capabilities), the default first.
    apis: renews ? RENEWING : PLAIN,
    // A lock of another kind has a name of its own (hello's), so that
    // `--lock exec:…` registers it beside the shipped lock file's.
    ...(renews ? {} : { variant: 'acquire' }),
  };
}

// settingsOf: the Redlock instance's settings: only what the lock options
// override (the library fills in its defaults); retry=driver: the older
// configuration (no retries in the library, the scenario's retry delay).
function settingsOf(opts, init) {
  const o = (init && init.options) || {};
  if (retryOf(opts) === 'driver') {
    const delay = Math.max(0, intOpt(opts.retry_delay_ms, o.retry_delay_ms ?? 10));
    return { retryCount: 0, retryDelay: delay, retryJitter: intOpt(opts.retry_jitter_ms, Math.floor(delay / 2)), driftFactor: given(opts.drift_factor) ? Number(opts.drift_factor) : LIBRARY.driftFactor };
  }
  const s = {};
  if (given(opts.retry_count)) s.retryCount = intOpt(opts.retry_count);
  if (given(opts.retry_delay_ms)) s.retryDelay = intOpt(opts.retry_delay_ms);
  if (given(opts.retry_jitter_ms)) s.retryJitter = intOpt(opts.retry_jitter_ms);
  if (given(opts.drift_factor)) s.driftFactor = Number(opts.drift_factor);
  if (s.driftFactor !== undefined && !Number.isFinite(s.driftFactor)) throw new Error(`drift_factor=${opts.drift_factor} is not a number`);
  return s;
}

// thresholdOf: using()'s automaticExtensionThreshold for a TTL: the
// library's 500 ms (or ttl - renew_interval_ms), at most ttl - 100, the
// most using() accepts ("A lock `duration` must be at least 100ms greater
// than the `automaticExtensionThreshold` setting").
function thresholdOf(ttl, renewMs) {
  const t = renewMs > 0 ? ttl - renewMs : LIBRARY.automaticExtensionThreshold;
  return Math.min(t, ttl - 100);
}

class RedlockLock {
  constructor(lib, clients, init, opts, push, name) {
    const Redlock = lib.Redlock || lib.default || lib;
    const o = init.options || {};
    this.name = name;
    this.push = push;
    this.api = apiOf(opts);
    if (!APIS.includes(this.api)) throw new Error(`api=${this.api}: ${name} calls redlock in modes ${APIS.join(', ')} (using and acquire-extend renew, acquire does not)`);
    this.driverRetry = retryOf(opts) === 'driver';
    this.cmdTimeout = o.command_timeout_ms > 0 ? o.command_timeout_ms : 1000;
    // The lock option renew_interval_ms, else (retry=driver, and the
    // application's timer of acquire-extend) the scenario's.
    const renewOpt = intOpt(opts.renew_interval_ms, 0);
    this.renewMs = renewOpt > 0 ? renewOpt : this.driverRetry ? (o.renew_interval_ms || 0) : 0;
    this.extendEvery = renewOpt > 0 ? renewOpt : (o.renew_interval_ms || 0);
    this.settings = settingsOf(opts, init);
    this.retryDelay = this.settings.retryDelay ?? LIBRARY.retryDelay;
    this.jitter = this.settings.retryJitter ?? LIBRARY.retryJitter;
    this.redlock = new Redlock(clients, this.settings);
    this.leases = new Map(); // lease id -> lease
    this.byValue = new Map(); // lock value -> lease
    this.scopes = new Set(); // the idioms under way (SIGTERM ends them)
    this.journal = new AsyncLocalStorage(); // an acquire's attempts, for its wait_ms deadline
    this.n = 0;
    this.wrap();
  }

  // wrap overrides this instance's acquire (to see the Lock that using()
  // takes, which redlock v5 does not hand to the routine), extend (to push
  // each renewal the library or the application's timer makes) and
  // _attemptOperation (to know, when wait_ms runs out, whether an attempt
  // is on the wire). A using() call's Lock goes to the box in its settings
  // (using() hands its settings to acquire), so calls that overlap (one
  // abandoned, the next one) each see their own.
  wrap() {
    const rl = this.redlock;
    const acquire = rl.acquire.bind(rl);
    const extend = rl.extend.bind(rl);
    const attempt = rl._attemptOperation.bind(rl);
    this.extendRaw = extend;
    const isAcquire = (script) => script === 'acquireLock' || (rl.scripts && script === rl.scripts.acquireScript);
    rl._attemptOperation = (script, ...rest) => {
      const p = attempt(script, ...rest);
      const j = this.journal.getStore();
      if (j && !j.closed && isAcquire(script)) {
        const rec = { done: false, stats: null };
        j.attempts.push(rec);
        p.then((r) => r.stats).then((s) => { rec.stats = s; rec.done = true; }, () => { rec.done = true; });
      }
      return p;
    };
    rl.acquire = async (resources, duration, settings, ...rest) => {
      const lock = await acquire(resources, duration, settings, ...rest);
      const box = settings && settings[TAKEN];
      if (box) box.lock = lock;
      return lock;
    };
    rl.extend = async (existing, ...args) => {
      const lease = this.byValue.get(existing.value);
      const watched = lease && lease.renews && !lease.forgotten;
      const t0 = mono();
      try {
        const lock = await extend(existing, ...args);
        const t1 = mono();
        if (watched) {
          lease.lock = lock;
          this.push({ type: 'renewal', lease: lease.id, t0, t1, outcome: 'ok', deadline_ns: wallToMono(lock.expiration) });
        }
        return lock;
      } catch (e) {
        const t1 = mono();
        if (watched) {
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
      const v = this.vote(s);
      if (v.kind === 'indeterminate') return v;
    }
    return { kind: 'refused', error: e.message };
  }

  // vote judges one attempt's stats: refused when the refusals alone reach
  // the quorum, granted on a quorum of yes, indeterminate otherwise.
  vote(s) {
    let refused = 0;
    let unknown = null;
    for (const err of s.votesAgainst.values()) {
      if (err.name === 'ResourceLockedError' || definiteNo(err)) refused++;
      else unknown = unknown || err;
    }
    if (s.votesFor.size >= s.quorumSize) return { kind: 'granted' };
    if (refused >= s.quorumSize) return { kind: 'refused' };
    return { kind: 'indeterminate', error: unknown ? unknown.message : 'no quorum either way' };
  }

  newLease(lock, renews) {
    const lease = { id: `L${++this.n}`, lock, renews };
    this.leases.set(lease.id, lease);
    this.byValue.set(lock.value, lease);
    return lease;
  }

  dropLease(lease) {
    this.leases.delete(lease.id);
    if (this.byValue.get(lease.lock.value) === lease) this.byValue.delete(lease.lock.value);
  }

  // forget ends a lease on the driver's side only, as an application that
  // gave up the call does (a release cancelled before it started): nothing
  // is sent, the key stays until its TTL, or as long as using() goes on
  // extending it; no renewal or lost is pushed for it any more.
  forget(id) {
    const lease = this.leases.get(id);
    if (!lease) return;
    this.dropLease(lease);
    lease.forgotten = true;
  }

  // open starts the mode's idiom for key: a scope (lib/scope.js) whose
  // entered resolves with the lease once the critical section runs.
  open(key, ttl, settings) {
    const late = (lease) => {
      // Won after its caller stopped waiting: the section ends at once.
      this.dropLease(lease);
      lease.forgotten = true;
      log(`${lease.id} of ${key}: won after its caller stopped waiting; its critical section ends at once (released)`);
    };
    const scope = openScope((enter) => (this.api === 'using' ? this.usingIdiom(key, ttl, settings, enter) : this.acquireIdiom(key, ttl, settings, enter)), { late });
    if (this.closing) scope.abandon(); // after SIGTERM: a win ends at once
    this.scopes.add(scope);
    scope.done.then(() => this.scopes.delete(scope), () => this.scopes.delete(scope));
    return scope;
  }

  // The using() idiom: the routine is the critical section.
  usingIdiom(key, ttl, settings, enter) {
    const box = {};
    const s = { ...settings, automaticExtensionThreshold: thresholdOf(ttl, this.renewMs), [TAKEN]: box };
    return this.redlock.using([key], ttl, s, (signal) => {
      // Runs after using() awaited its acquire, so box.lock is set.
      const lease = this.newLease(box.lock, true);
      signal.addEventListener('abort', () => {
        if (lease.forgotten || lease.ended) return;
        this.push({ type: 'lost', lease: lease.id, t: mono(), reason: signal.error ? signal.error.message : 'aborted' });
      });
      return enter(lease);
    });
  }

  // The explicit idiom: acquire, the critical section, release in finally
  // (acquire-extend: the application's timer extends the lock meanwhile).
  async acquireIdiom(key, ttl, settings, enter) {
    const lock = await this.redlock.acquire([key], ttl, settings);
    const lease = this.newLease(lock, this.api === 'acquire-extend');
    if (lease.renews) this.startExtending(lease, ttl, this.extendEvery > 0 ? this.extendEvery : Math.max(1, Math.floor(ttl / 3)));
    try {
      await enter(lease);
    } finally {
      lease.ended = true;
      clearTimeout(lease.timer);
      await lease.lock.release();
    }
  }

  // startExtending: `lock = await lock.extend(ttl)` every ms while the
  // section runs; the first failure tells the section (lost) and stops.
  startExtending(lease, ttl, ms) {
    const tick = async () => {
      if (lease.ended) return;
      try {
        lease.lock = await lease.lock.extend(ttl);
      } catch (e) {
        if (!lease.ended && !lease.forgotten) this.push({ type: 'lost', lease: lease.id, t: mono(), reason: `extend failed: ${e.message}` });
        return;
      }
      if (!lease.ended) lease.timer = setTimeout(tick, ms);
    };
    lease.timer = setTimeout(tick, ms);
  }

  acquired(lease, t0) {
    return { type: 'acquired', lease: lease.id, token: lease.lock.value, depth: 1, deadline_ns: wallToMono(lease.lock.expiration), t0, t1: mono() };
  }

  async acquire(req) {
    if (this.driverRetry) return this.acquireDriverRetry(req);
    const ttl = req.ttl_ms;
    const wait = req.wait_ms || 0;
    const t0 = mono();
    // wait_ms 0: one attempt (retryCount 0); otherwise the library's own
    // retries, raced against wait_ms.
    const j = { attempts: [], closed: false };
    const scope = this.journal.run(j, () => this.open(req.key, ttl, wait === 0 ? { retryCount: 0 } : {}));
    const r = await race(scope.entered, wait);
    j.closed = true;
    if (r.value) return this.acquired(r.value, t0);
    if (r.error) {
      const c = await this.classify(r.error);
      return c.kind === 'refused' ? { type: 'not_acquired', t0, t1: mono() } : { type: c.kind, error: c.error, t0, t1: mono() };
    }
    if (!r.deadline) return { type: 'not_acquired', t0, t1: mono() };
    // wait_ms ran out with the library still trying: a late win is released
    // at once (open's late). Unknown when an attempt was on the wire or
    // left an unknown outcome; refused when every attempt was.
    scope.abandon();
    const t1 = mono();
    for (const a of j.attempts) {
      if (!a.done) return { type: 'indeterminate', error: `wait_ms ${wait} ran out with an attempt on the wire (the library's retries go on; a late win is released at once)`, t0, t1 };
      if (!a.stats) continue;
      const v = this.vote(a.stats);
      if (v.kind === 'granted') return { type: 'indeterminate', error: `the servers granted it as wait_ms ${wait} ran out (released at once)`, t0, t1 };
      if (v.kind === 'indeterminate') return { type: 'indeterminate', error: v.error, t0, t1 };
    }
    return { type: 'not_acquired', t0, t1 };
  }

  // retry=driver: one attempt per call (retryCount 0), again every
  // retry_delay_ms ± jitter until wait_ms.
  async acquireDriverRetry(req) {
    const wait = req.wait_ms || 0;
    const t0 = mono();
    const end = t0 + wait * 1e6;
    for (;;) {
      const r = await race(this.open(req.key, req.ttl_ms, { retryCount: 0 }).entered, 0);
      if (r.value) return this.acquired(r.value, t0);
      const c = r.error ? await this.classify(r.error) : { kind: 'refused' };
      if (c.kind !== 'refused') return { type: c.kind, error: c.error, t0, t1: mono() };
      const left = (end - mono()) / 1e6;
      if (wait === 0 || left <= 0 || this.closing) return { type: 'not_acquired', t0, t1: mono() };
      const d = Math.max(0, this.retryDelay + Math.floor((Math.random() * 2 - 1) * this.jitter));
      await sleep(Math.min(d, left));
      if (mono() >= end) return { type: 'not_acquired', t0, t1: mono() };
    }
  }

  // release leaves the scope: normally, or (throw) by an Error raised in
  // the critical section; the idiom's exit releases. Bounded by
  // 2 × command_timeout_ms + 4 s (lockchaos allows 5 s more than two
  // command timeouts): the library's release retries 10 times 200 ms on a
  // refusal, and using() first waits for an extension in flight.
  async release(req) {
    const lease = leaseOf(this.leases, req.lease);
    this.dropLease(lease);
    lease.ended = true;
    const thrown = thrownOf(req);
    const t0 = mono();
    const scope = lease.scope;
    scope.end(thrown);
    const bound = 2 * this.cmdTimeout + 4000;
    const r = await race(scope.done, bound);
    const t1 = mono();
    const raised = thrown ? { raised: !!r.error } : {};
    if (r.deadline) return { type: 'indeterminate', error: `the idiom's release had not returned after ${bound} ms`, ...raised, t0, t1 };
    if (!r.error || r.error === thrown) return { type: 'released', ...raised, t0, t1 };
    const c = await this.classify(r.error);
    return { type: c.kind === 'refused' ? 'not_owner' : c.kind, error: c.error, ...raised, t0, t1 };
  }

  async extend(req) {
    if (this.api === 'using') return { type: 'error', error: 'unsupported: api=using renews in the background (using()); extend needs api=acquire or acquire-extend' };
    const lease = leaseOf(this.leases, req.lease);
    const t0 = mono();
    try {
      lease.lock = await this.extendRaw(lease.lock, req.ttl_ms, { retryCount: 0 });
      const t1 = mono();
      return { type: 'extended', deadline_ns: wallToMono(lease.lock.expiration), t0, t1 };
    } catch (e) {
      const t1 = mono();
      const c = await this.classify(e);
      return c.kind === 'refused' ? { type: 'not_owner', error: c.error, t0, t1 } : { type: c.kind, error: c.error, t0, t1 };
    }
  }

  // shutdown (SIGTERM): every critical section ends normally, so each
  // idiom releases as it leaves (using() after its extension in flight, the
  // explicit idiom in its finally); an acquire still trying (retry=driver:
  // its next attempts too) ends its section at once if it wins. Resolves
  // when every idiom has returned.
  async shutdown() {
    this.closing = true;
    for (const lease of this.leases.values()) lease.ended = true;
    while (this.scopes.size > 0) {
      const all = [...this.scopes];
      for (const s of all) {
        s.abandon();
        s.end();
      }
      await Promise.allSettled(all.map((s) => s.done));
    }
  }
}

function spec(name, pkg) {
  return {
    name, pkg, options: OPTIONS, describe,
    create: (lib, clients, init, opts, push) => new RedlockLock(lib, clients, init, opts, push, name),
  };
}

module.exports = {
  nodeRedlock: spec('node-redlock', 'redlock'),
  sesamecareRedlock: spec('sesamecare-redlock', '@sesamecare-oss/redlock'),
  // For the tests.
  apiOf, describe, settingsOf, thresholdOf, LIBRARY, APIS,
};
