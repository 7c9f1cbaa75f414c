'use strict';
// redis-semaphore's Mutex (one node) and RedlockMutex (a quorum of
// independent masters). Both refresh the lease on a timer (setInterval,
// refreshInterval, by default 0.8 of lockTimeout) and call onLockLost when a
// refresh fails; neither reports a validity time.
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
const { mono, intOpt, leaseOf } = require('./proto');
const { tap, journalRun, definiteNo } = require('./clients');

const OPTIONS = ['version', 'renew_interval_ms', 'offline_queue'];

function describe(multi) {
  return (opts) => {
    const renews = opts.renew_interval_ms === undefined || String(opts.renew_interval_ms) !== '0';
    const caps = [];
    if (renews) caps.push('renews');
    if (multi) caps.push('multi-node');
    return { capabilities: caps, reports: renews ? ['lost', 'renewals'] : [] };
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
  constructor(lib, clients, init, opts, push, multi) {
    const o = init.options || {};
    this.Mutex = multi ? lib.RedlockMutex : lib.Mutex;
    this.multi = multi;
    this.target = multi ? clients : clients[0];
    this.n = multi ? clients.length : 1;
    this.quorum = multi ? Math.round((clients.length + 1) / 2) : 1; // the library's getQuorum
    this.prefix = init.key_prefix || '';
    this.push = push;
    this.retryDelay = Math.max(1, o.retry_delay_ms ?? 10);
    this.cmdTimeout = o.command_timeout_ms || 1000;
    const r = opts.renew_interval_ms;
    this.renewMs = r === 'library' ? undefined : intOpt(r, o.renew_interval_ms > 0 ? o.renew_interval_ms : undefined);
    this.leases = new Map();
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

  relKey(key) {
    if (!key.startsWith(this.prefix)) throw new Error(`key ${JSON.stringify(key)} is not under key_prefix ${JSON.stringify(this.prefix)}`);
    return key.slice(this.prefix.length);
  }

  async acquire(req) {
    const rel = this.relKey(req.key);
    const wait = req.wait_ms || 0;
    const lease = { id: `L${++this.seq}` };
    const mutex = new this.Mutex(this.target, rel, {
      lockTimeout: req.ttl_ms,
      // wait_ms 0 is one attempt; the library's loop also needs time left.
      acquireTimeout: wait > 0 ? wait : this.cmdTimeout + 1000,
      acquireAttemptsLimit: wait > 0 ? Number.POSITIVE_INFINITY : 1,
      retryInterval: this.retryDelay,
      ...(this.renewMs !== undefined ? { refreshInterval: this.renewMs } : {}),
      onLockLost: (err) => { if (!lease.forgotten) this.push({ type: 'lost', lease: lease.id, t: mono(), reason: err.message }); },
    });
    lease.mutex = mutex;
    this.watchRefresh(lease);
    const t0 = mono();
    const [j, p] = journalRun(() => mutex.tryAcquire());
    let ok = false;
    let thrown = null;
    try { ok = await p; } catch (e) { thrown = e; }
    const t1 = mono();
    j.closed = true;
    if (ok) {
      this.leases.set(lease.id, lease);
      const redisKey = `${this.prefix}mutex:${rel}`;
      return { type: 'acquired', lease: lease.id, token: mutex.identifier, depth: 1, keys: [redisKey], redis_key: redisKey, t0, t1 };
    }
    if (thrown) return { type: 'indeterminate', error: thrown.message, t0, t1 };
    // Every attempt sends one SET per client, in client order: an attempt
    // whose answers left a quorum possible makes the outcome unknown (the
    // library's cleanup DEL may not have reached that server either).
    let attempt = null;
    const attempts = [];
    for (const r of j.calls) {
      if (r.name !== 'set') continue;
      if (r.client === 0 || !attempt) attempts.push(attempt = { calls: [] });
      attempt.calls.push(r);
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
    m._refresh = async () => {
      const t0 = mono();
      const [j, p] = journalRun(refresh);
      try {
        const ok = await p;
        const t1 = mono();
        j.closed = true;
        const t = tally(j, ['eval', 'evalsha'], isOne);
        const outcome = ok ? 'ok' : this.judge(t) === 'indeterminate' ? 'indeterminate' : 'not_owner';
        if (!lease.forgotten) this.push({ type: 'renewal', lease: lease.id, t0, t1, outcome, ...(t.error ? { error: t.error } : {}) });
        return ok;
      } catch (e) {
        j.closed = true;
        if (!lease.forgotten) this.push({ type: 'renewal', lease: lease.id, t0, t1: mono(), outcome: 'indeterminate', error: e.message });
        throw e;
      }
    };
  }

  // forget ends a lease on the driver's side only, as an application that
  // gave up the call does (a cancelled acquire that won after all, a
  // release cancelled before it started): nothing is sent, the library's
  // refresh timer goes on as it does; no renewal or lost is pushed for it.
  forget(id) {
    const lease = this.leases.get(id);
    if (!lease) return;
    this.leases.delete(id);
    lease.forgotten = true;
  }

  async release(req) {
    const lease = leaseOf(this.leases, req.lease);
    this.leases.delete(lease.id);
    const held = lease.mutex.isAcquired;
    const t0 = mono();
    const [j, p] = journalRun(() => lease.mutex.release());
    let thrown = null;
    try { await p; } catch (e) { thrown = e; }
    const t1 = mono();
    j.closed = true;
    if (!held) return { type: 'not_owner', error: 'the library had lost the lock (a refresh failed); its release sent nothing', t0, t1 };
    if (thrown) return { type: 'indeterminate', error: thrown.message, t0, t1 };
    const t = tally(j, ['eval', 'evalsha'], isOne);
    const v = this.judge(t);
    if (v === 'yes') return { type: 'released', t0, t1 };
    if (v === 'no') return { type: 'not_owner', t0, t1 };
    return { type: 'indeterminate', error: t.error, t0, t1 };
  }

  async extend() {
    return { type: 'error', error: 'unsupported: redis-semaphore has no extend; it refreshes on its own timer' };
  }
}

function spec(name, multi) {
  return {
    name, pkg: 'redis-semaphore', options: OPTIONS, describe: describe(multi),
    clientOptions: (init) => ({ keyPrefix: init.key_prefix || undefined }),
    create: (lib, clients, init, opts, push) => new SemaphoreLock(lib, clients, init, opts, push, multi),
  };
}

module.exports = {
  semaphoreMutex: spec('redis-semaphore-mutex', false),
  semaphoreRedlock: spec('redis-semaphore-redlock', true),
};
