'use strict';
// redis-semaphore's Mutex (one node) and RedlockMutex (a quorum of
// independent masters). Both refresh the lease on a timer (setInterval,
// refreshInterval, by default 0.8 of lockTimeout) and call onLockLost when a
// refresh fails; neither reports a validity time.
//
// API modes (the lock option api; docs/driver-protocol.md "API modes"),
// both scoped, both with the same capabilities:
//   acquire      (default, the README's first example) `await
//                mutex.acquire(); try { … } finally { await mutex.release() }`:
//                acquire() throws TimeoutError when it gives up.
//   try-acquire  (the README's "optional lock") `if (await
//                mutex.tryAcquire()) { try { … } finally { await
//                mutex.release() } }`: false when it gives up.
// The library's defaults (retryInterval 10 ms, refreshInterval 0.8 ×
// lockTimeout, acquireAttemptsLimit unbounded) except: lockTimeout is the
// request's TTL; the wait is the idiom's own acquireTimeout = wait_ms
// (wait_ms 0: acquireAttemptsLimit 1, one attempt), and a safety race at
// wait_ms + 2 × command_timeout_ms + 1 s (its loop reads Date.now(), which a
// client clock fault moves). renew_interval_ms (a lock option) overrides the
// refresh interval ("0": no refresh).
//
// The library answers less than the protocol asks: release() returns
// nothing (owner or not), and RedlockMutex counts a SET that timed out as a
// no. The driver taps the clients' set/eval/evalsha (clients.tap) during
// each library call and reads the servers' answers from the journal: a
// refusal is definite when the refusals alone leave no quorum.
//
// Keys: the library stores a key K as "mutex:K". The clients carry
// key_prefix as ioredis keyPrefix and the library gets K without it, so the
// key in Redis is <key_prefix>mutex:<rest of K>, under the prefix as the
// protocol wants; the acquired reply names it in keys (the protocol's
// field, docs/driver-protocol.md) and in redis_key (this driver's older
// extension, which its tests read).
const { mono, intOpt, leaseOf, log } = require('./proto');
const { tap, journalRun, definiteNo } = require('./clients');
const { openScope, race, thrownOf } = require('./scope');

const OPTIONS = ['version', 'api', 'renew_interval_ms', 'offline_queue'];
const APIS = ['acquire', 'try-acquire'];

// refreshOf: the refreshInterval the lock option asks for, undefined for
// the library's default (unset, or "library").
function refreshOf(opts) {
  const r = opts.renew_interval_ms;
  if (r === undefined || r === null || r === '' || r === 'library') return undefined;
  const n = intOpt(r);
  if (n < 0) throw new Error(`renew_interval_ms=${r} is negative`);
  return n;
}

function describe(multi) {
  return (opts) => {
    const renews = refreshOf(opts) !== 0;
    const caps = [];
    if (renews) caps.push('renews');
    if (multi) caps.push('multi-node');
    return { capabilities: caps, reports: renews ? ['lost', 'renewals'] : [], apis: APIS };
  };
}

// tally reads a journal's answers to the named commands, the first answer
// of each client, an EVALSHA's NOSCRIPT skipped for the EVAL after it (a
// failed RedlockMutex refresh is followed by its cleanup's DELs):
// yes (a reply equal to yesValue), no (another reply or an error reply),
// unknown (a timeout, a broken connection).
function tally(journal, names, yes) {
  const last = new Map();
  for (const r of journal.calls) {
    if (!names.includes(r.name)) continue;
    if (r.error && /^NOSCRIPT/.test(r.error.message)) continue;
    if (!last.has(r.client)) last.set(r.client, r);
  }
  const t = { yes: 0, no: 0, unknown: 0, error: null };
  for (const r of last.values()) {
    if (r.error) {
      if (definiteNo(r.error)) t.no++;
      else { t.unknown++; t.error = t.error || r.error.message; }
    } else if (yes(r.value)) t.yes++;
    else t.no++;
  }
  return t;
}

const isOne = (v) => Number(v) === 1;

class SemaphoreLock {
  constructor(lib, clients, init, opts, push, multi, name) {
    const o = init.options || {};
    this.api = opts.api === undefined || opts.api === '' ? APIS[0] : String(opts.api);
    if (!APIS.includes(this.api)) throw new Error(`api=${this.api}: ${name} calls redis-semaphore in modes ${APIS.join(', ')}`);
    this.Mutex = multi ? lib.RedlockMutex : lib.Mutex;
    this.TimeoutError = lib.TimeoutError;
    this.multi = multi;
    this.target = multi ? clients : clients[0];
    this.n = multi ? clients.length : 1;
    this.quorum = multi ? Math.round((clients.length + 1) / 2) : 1; // the library's getQuorum
    this.prefix = init.key_prefix || '';
    this.push = push;
    this.cmdTimeout = o.command_timeout_ms > 0 ? o.command_timeout_ms : 1000;
    this.refresh = refreshOf(opts);
    this.leases = new Map();
    this.scopes = new Set(); // the idioms under way (SIGTERM ends them)
    this.seq = 0;
    tap(clients, ['set', 'eval', 'evalsha']);
  }

  // Outcome of a call whose answers are in journal j: yes on a quorum,
  // definite no when the no's leave no quorum, indeterminate otherwise.
  judge(t) {
    if (t.yes >= this.quorum) return 'yes';
    if (this.n - t.no < this.quorum) return 'no';
    return 'indeterminate';
  }

  // gaveUp: acquire()'s TimeoutError (its class has no name of its own).
  gaveUp(e) {
    return (this.TimeoutError && e instanceof this.TimeoutError) || (e && e.constructor && e.constructor.name === 'TimeoutError');
  }

  relKey(key) {
    if (!key.startsWith(this.prefix)) throw new Error(`key ${JSON.stringify(key)} is not under key_prefix ${JSON.stringify(this.prefix)}`);
    return key.slice(this.prefix.length);
  }

  // The idiom: acquire (or tryAcquire), the critical section, release in
  // finally; the release's commands go to a journal of their own.
  async idiom(mutex, lease, enter) {
    if (this.api === 'acquire') await mutex.acquire();
    else if (!(await mutex.tryAcquire())) return;
    try {
      await enter(lease);
    } finally {
      lease.ended = true;
      const [j, p] = journalRun(() => mutex.release());
      lease.releaseJournal = j;
      try {
        await p;
      } finally {
        j.closed = true;
      }
    }
  }

  async acquire(req) {
    const rel = this.relKey(req.key);
    const wait = req.wait_ms || 0;
    const lease = { id: `L${++this.seq}` };
    const mutex = new this.Mutex(this.target, rel, {
      lockTimeout: req.ttl_ms,
      // wait_ms 0 is one attempt; the loop also needs time left (the
      // library's acquireTimeout, 10 s, then).
      ...(wait > 0 ? { acquireTimeout: wait } : { acquireAttemptsLimit: 1 }),
      ...(this.refresh !== undefined ? { refreshInterval: this.refresh } : {}),
      onLockLost: (err) => { if (!lease.forgotten && !lease.ended) this.push({ type: 'lost', lease: lease.id, t: mono(), reason: err.message }); },
    });
    lease.mutex = mutex;
    this.watchRefresh(lease);
    const t0 = mono();
    const late = () => {
      lease.forgotten = true;
      log(`${lease.id} of ${req.key}: won after its caller stopped waiting; its critical section ends at once (released)`);
    };
    const [j, scope] = journalRun(() => openScope((enter) => this.idiom(mutex, lease, enter), { late }));
    if (this.closing) scope.abandon(); // after SIGTERM: a win ends at once
    this.scopes.add(scope);
    scope.done.then(() => this.scopes.delete(scope), () => this.scopes.delete(scope));
    const bound = wait + 2 * this.cmdTimeout + 1000;
    const r = await race(scope.entered, bound);
    j.closed = true;
    const t1 = mono();
    if (r.value) {
      this.leases.set(lease.id, lease);
      const redisKey = `${this.prefix}mutex:${rel}`;
      return { type: 'acquired', lease: lease.id, token: mutex.identifier, depth: 1, keys: [redisKey], redis_key: redisKey, t0, t1 };
    }
    if (r.deadline) {
      scope.abandon();
      if (j.calls.some((c) => !c.done)) return { type: 'indeterminate', error: `the library's acquire had not returned ${bound} ms on, a command on the wire (a late win is released at once)`, t0, t1 };
    } else if (r.error && !this.gaveUp(r.error)) {
      return { type: 'indeterminate', error: r.error.message, t0, t1 };
    }
    // Given up (tryAcquire false, acquire()'s TimeoutError) or the safety
    // bound: every attempt sends one SET per client, in client order; an
    // attempt whose answers left a quorum possible makes the outcome
    // unknown (the library's cleanup DEL may not have reached that server).
    let attempt = null;
    const attempts = [];
    for (const c of j.calls) {
      if (c.name !== 'set') continue;
      if (c.client === 0 || !attempt) attempts.push(attempt = { calls: [] });
      attempt.calls.push(c);
    }
    for (const a of attempts) {
      const t = tally(a, ['set'], (v) => v === 'OK');
      if (t.unknown > 0 && this.judge(t) === 'indeterminate') {
        return { type: 'indeterminate', error: t.error, t0, t1 };
      }
    }
    return { type: 'not_acquired', t0, t1 };
  }

  // watchRefresh wraps the lease's _refresh (what the library's timer
  // calls) to push each renewal and its outcome. A refresh of Mutex that
  // throws (a command timeout) is rethrown as the library would: its timer
  // has no catch, an unhandled rejection (driver.js logs it; plain Node
  // would exit).
  watchRefresh(lease) {
    const m = lease.mutex;
    const refresh = m._refresh.bind(m);
    const quiet = () => lease.forgotten || lease.ended;
    m._refresh = async () => {
      const t0 = mono();
      const [j, p] = journalRun(refresh);
      try {
        const ok = await p;
        const t1 = mono();
        j.closed = true;
        const t = tally(j, ['eval', 'evalsha'], isOne);
        const outcome = ok ? 'ok' : this.judge(t) === 'indeterminate' ? 'indeterminate' : 'not_owner';
        if (!quiet()) this.push({ type: 'renewal', lease: lease.id, t0, t1, outcome, ...(t.error ? { error: t.error } : {}) });
        return ok;
      } catch (e) {
        j.closed = true;
        if (!quiet()) this.push({ type: 'renewal', lease: lease.id, t0, t1: mono(), outcome: 'indeterminate', error: e.message });
        throw e;
      }
    };
  }

  // forget ends a lease on the driver's side only, as an application that
  // gave up the call does (a release cancelled before it started): nothing
  // is sent, the library's refresh timer goes on as it does; no renewal or
  // lost is pushed for it.
  forget(id) {
    const lease = this.leases.get(id);
    if (!lease) return;
    this.leases.delete(id);
    lease.forgotten = true;
  }

  // release leaves the scope: normally, or (throw) by an Error raised in
  // the critical section; the idiom's finally releases. release() returns
  // nothing: the journal of its commands says what the servers answered.
  async release(req) {
    const lease = leaseOf(this.leases, req.lease);
    this.leases.delete(lease.id);
    const held = lease.mutex.isAcquired;
    const thrown = thrownOf(req);
    const t0 = mono();
    lease.scope.end(thrown);
    const bound = 2 * this.cmdTimeout + 4000;
    const r = await race(lease.scope.done, bound);
    const t1 = mono();
    const raised = thrown ? { raised: !!r.error } : {};
    if (r.deadline) return { type: 'indeterminate', error: `the idiom's release had not returned after ${bound} ms`, ...raised, t0, t1 };
    if (!held) return { type: 'not_owner', error: 'the library had lost the lock (a refresh failed); its release sent nothing', ...raised, t0, t1 };
    if (r.error && r.error !== thrown) return { type: 'indeterminate', error: r.error.message, ...raised, t0, t1 };
    const t = tally(lease.releaseJournal || { calls: [] }, ['eval', 'evalsha'], isOne);
    const v = this.judge(t);
    if (v === 'yes') return { type: 'released', ...raised, t0, t1 };
    if (v === 'no') return { type: 'not_owner', ...raised, t0, t1 };
    return { type: 'indeterminate', error: t.error, ...raised, t0, t1 };
  }

  async extend() {
    return { type: 'error', error: 'unsupported: redis-semaphore has no extend; it refreshes on its own timer' };
  }

  // shutdown (SIGTERM): every critical section ends normally, so each
  // idiom's finally releases; an acquire still trying ends its section at
  // once if it wins. Resolves when every idiom has returned.
  async shutdown() {
    this.closing = true;
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

function spec(name, multi) {
  return {
    name, pkg: 'redis-semaphore', options: OPTIONS, describe: describe(multi),
    clientOptions: (init) => ({ keyPrefix: init.key_prefix || undefined }),
    create: (lib, clients, init, opts, push) => new SemaphoreLock(lib, clients, init, opts, push, multi, name),
  };
}

module.exports = {
  semaphoreMutex: spec('redis-semaphore-mutex', false),
  semaphoreRedlock: spec('redis-semaphore-redlock', true),
  APIS,
};
