'use strict';
// lockchaos's Node driver kit: `npm install ./drivers/node/kit` (or a
// "file:" dependency). serve(lock) speaks the lock-client protocol
// (docs/driver-protocol.md) on stdin and stdout for a lock of a few calls:
//
//   serve({
//     hello: { name, library, version, capabilities: [], reports: [], options: [] },
//     async init(req) {},                  // connect: req.endpoints, req.conn_name, req.options
//     async acquire(req) {},               // one call: a lease's data ({ token }), or null (refused)
//     async release(req, lease) {},        // true: released, false: not the owner
//     isRefusal(err) {},                   // optional: an error that means the server said no
//     async close() {},                    // optional: on shutdown
//   });
//
// or, for a library whose users write a scoped idiom (a withLock(key, fn),
// a callback that runs while the lock is held), instead of acquire and
// release:
//
//     scoped: (req, body) => withLock(req.key, req.ttl_ms, (token) => body({ token })),
//
// scoped runs the idiom once (one attempt, or the idiom's own wait bounded
// by req.wait_ms); the idiom calls body(lease data) inside its scope, and
// body's promise is the critical section: it resolves when lockchaos
// releases, or rejects with an Error when lockchaos raises one there (the
// throw extension). The idiom returning without calling body is a refusal
// (retried until wait_ms); what it does when body settles (release, and
// rethrow or swallow the error) is what the answer reports: resolved or
// rejected with the thrown error: released; rejected with a refusal
// (isRefusal): not_owner; with anything else: indeterminate.
//
// API modes: `apis: { 'with-lock': { scoped }, 'try-unlock': { acquire, release } }`
// (the default first) offers each idiom as a mode: hello lists them in
// apis and the option api, init's options.extra.api (or
// LOCKCHAOS_LOCK_OPTS at start) picks one, an unknown one is an error
// naming it. A lock file lists the same in `apis:`; every mode must have
// the lock's capabilities.
//
// The kit answers ping and clock at once (Node's one thread is free while a
// call awaits), times each call (t0/t1 on the monotonic clock), keeps
// leases until a definite answer, retries an acquire until wait_ms when the
// lock answers null, and turns an error that is not a refusal or a server's
// ReplyError into indeterminate: the command may have run.
//
// Extensions (hello lists them, with any the lock names):
// - cancel: as a Node application gives up a call: it stops waiting (the
//   call's promise loses a race with an AbortSignal's abort) and the call
//   goes on unobserved; cancel_ok, then "cancelled" at once. What the call
//   does after is dropped: an acquire that won (the kit's retries go on
//   until wait_ms, as a library's wait would) is released at once and never
//   kept as a lease, a cancelled release's lease is forgotten. The signal
//   is the calls' last argument (acquire(req, signal), release(req, lease,
//   signal), extend(req, lease, signal), scoped(req, body, signal)).
// - throw: a release with "throw" raises an Error (its message) in the
//   critical section: a scoped idiom gets it from body, an explicit lock is
//   released as a `finally` does and the error goes on to the application
//   (raised: true).
// - reset (a lock with close): the run is over, lockchaos reuses the
//   process: close, then init again with new endpoints and names (warm
//   drivers); refused while a lease is held.
// - sigterm: on SIGTERM the kit does a Node service's graceful shutdown:
//   every critical section ends (a scoped idiom leaves its scope, an
//   explicit lease is released as a request handler's finally does), an
//   acquire still under way releases at once what it wins, the kit waits for
//   them at most the TTL, calls close and exits 0.
// - tasks: several lockchaos clients in this one process (the lock option
//   tasks=N), as a web server's request handlers share one client: each
//   sends its own init and names itself (client) in every request; the
//   kit calls init once, for the first (its endpoints and conn_name, which
//   is the process's), and answers the others' at once. Requests of
//   different clients run side by side (Node's one thread interleaves
//   them at each await); leases are the process's, named uniquely in it.
const readline = require('node:readline');

const ORIGIN = process.hrtime.bigint();
const now = () => Number(process.hrtime.bigint() - ORIGIN);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (s) => process.stderr.write(`lockchaos driver: ${s}\n`);

// A timeout or a broken connection hides the server's answer; a ReplyError
// is the server's own (READONLY, NOSCRIPT, a script's error).
function unknownOutcome(err) {
  return !(err && err.name === 'ReplyError');
}

// unreachable: err says a connection could not be made or timed out (init's
// error then says unavailable: the machine's failure, not a refused option).
function unreachable(err) {
  if (!err) return false;
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE'].includes(err.code)) return true;
  return /connect|timed? ?out|connection is closed/i.test(String(err.message));
}

// openScope runs a scoped idiom, run(enter), held open across requests
// (drivers/node/lib/scope.js has the same): entered resolves with the
// lease once the idiom calls enter, null when it returned without; end(err)
// ends the critical section (normally, or by throwing err in it); done is
// the idiom's promise; after abandon() an entry ends at once.
function openScope(run, late) {
  const s = { isEntered: false, abandoned: false, finish: null };
  let resolve;
  let reject;
  s.entered = new Promise((res, rej) => { resolve = res; reject = rej; });
  s.entered.catch(() => {});
  const enter = (lease) => {
    if (s.abandoned) {
      late(lease);
      return Promise.resolve();
    }
    s.isEntered = true;
    lease.scope = s;
    const section = new Promise((res, rej) => { s.finish = (err) => (err ? rej(err) : res()); });
    resolve(lease);
    return section;
  };
  s.end = (err) => { if (s.finish) s.finish(err); };
  s.abandon = () => { s.abandoned = true; };
  s.done = Promise.resolve().then(() => run(enter));
  s.done.then(() => { if (!s.isEntered) resolve(null); }, (e) => { if (!s.isEntered) reject(e); });
  s.done.catch(() => {});
  return s;
}

// race: {value} | {error} | {deadline: true} after ms.
function race(p, ms) {
  let timer;
  const bounded = new Promise((r) => { timer = setTimeout(() => r({ deadline: true }), ms); });
  return Promise.race([p.then((value) => ({ value }), (error) => ({ error })), bounded]).finally(() => clearTimeout(timer));
}

function thrownOf(r) {
  if (r.throw === undefined || r.throw === null || r.throw === false) return null;
  return new Error(typeof r.throw === 'string' && r.throw !== '' ? r.throw : 'lockchaos: an error in the critical section');
}

function startOpts() {
  const o = {};
  for (const kv of (process.env.LOCKCHAOS_LOCK_OPTS || '').split(',')) {
    const i = kv.indexOf('=');
    if (i > 0) o[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
  }
  return o;
}

function serve(lock, input = process.stdin, output = process.stdout) {
  const send = (o) => output.write(JSON.stringify(o) + '\n');
  const leases = new Map(); // id -> {data, scope}: scope for a scoped idiom's lease
  const scopes = new Set(); // the scoped idioms under way
  const modes = lock.apis || null;
  const names = modes ? Object.keys(modes) : [];
  let mode = modes ? modes[names[0]] : lock;
  let n = 0;
  let retryDelay = 10;
  let ttl = 0;
  let cmdTimeout = 1000;
  let terminating = false;
  const clients = new Set(); // the clients init answered (tasks: several)
  const isRefusal = (e) => {
    const f = mode.isRefusal || lock.isRefusal;
    return !!(f && f(e));
  };
  const union = (a, b) => [...new Set([...(a || []), ...b])];
  const h0 = lock.hello || {};

  // One attempt of a scoped idiom: its scope, tracked until it returns.
  const openIdiom = (r, signal) => {
    const s = openScope((enter) => mode.scoped(r, (data) => enter({ data: data || {} }), signal),
      () => log(`${r.key}: the idiom entered after its caller stopped waiting; its critical section ends at once`));
    if (terminating) s.abandon(); // after SIGTERM: an entry ends at once
    scopes.add(s);
    s.done.then(() => scopes.delete(s), () => scopes.delete(s));
    return s;
  };
  // releaseLease ends a lease as the application does: the scope's exit,
  // or the explicit release.
  const releaseLease = (r, l, err, signal) => {
    if (l.scope) {
      l.scope.end(err);
      return l.scope.done;
    }
    return mode.release(r, l.data, signal);
  };
  const acquired = (data, scope) => {
    const id = `L${++n}`;
    leases.set(id, { data, scope });
    const { token, keys, depth } = data;
    return { type: 'acquired', lease: id, depth: depth || 1, ...(token !== undefined && { token: String(token) }), ...(keys && { keys }) };
  };

  const handlers = {
    hello: async () => ({
      type: 'hello_ok', protocol: 1, language: 'node', capabilities: [], reports: [], ...h0,
      options: modes ? union(h0.options, ['api']) : (h0.options || []),
      extensions: union(h0.extensions, ['cancel', 'throw', 'sigterm', 'tasks', ...(lock.close ? ['reset'] : [])]),
      ...(modes && { apis: names }),
    }),
    // reset (a lock with close): the run is over; close, then the next init
    // connects anew. Refused while a lease is held or an idiom is open.
    async reset() {
      if (leases.size > 0 || scopes.size > 0) throw new Error(`reset: ${leases.size} leases held, ${scopes.size} idioms open`);
      clients.clear();
      await lock.close();
      return { type: 'reset_ok' };
    },
    async init(r) {
      const o = r.options || {};
      retryDelay = o.retry_delay_ms || retryDelay;
      ttl = o.ttl_ms || 0;
      cmdTimeout = o.command_timeout_ms > 0 ? o.command_timeout_ms : cmdTimeout;
      if (modes) {
        const api = (o.extra && o.extra.api) || startOpts().api || names[0];
        if (!modes[api]) throw new Error(`init: api=${api}: ${h0.name || 'this lock'} offers ${names.join(', ')}`);
        mode = modes[api];
      }
      // Another client of this process (tasks): the library's client is
      // connected already and shared, as the process's handlers share it.
      if (clients.size > 0) {
        clients.add(r.client);
        return { type: 'init_ok' };
      }
      try {
        await lock.init(r);
      } catch (e) {
        // A connection refused or timed out: the servers could not be
        // reached (init's error with unavailable), not a refused option.
        if (unreachable(e)) e.unavailable = true;
        throw e;
      }
      clients.add(r.client);
      return { type: 'init_ok' };
    },
    async acquire(r, signal) {
      const end = now() + (r.wait_ms || 0) * 1e6;
      for (;;) {
        let got = null;
        if (mode.scoped) {
          // The idiom's own wait is bounded by wait_ms; the kit stops
          // waiting two command timeouts and 1 s after it (unknown then).
          const s = openIdiom(r, signal);
          const bound = Math.max(0, (end - now()) / 1e6) + 2 * cmdTimeout + 1000;
          const res = await race(s.entered, bound);
          if (res.deadline) {
            s.abandon();
            return { type: 'indeterminate', error: `the idiom had not answered ${bound} ms on` };
          }
          if (res.error && !isRefusal(res.error)) throw res.error;
          if (res.value) return acquired(res.value.data, s);
        } else {
          try {
            got = await mode.acquire(r, signal);
          } catch (e) {
            if (!isRefusal(e)) throw e;
          }
          if (got) return acquired(got, null);
        }
        if (terminating || now() + retryDelay * 1e6 > end) return { type: 'not_acquired' };
        await sleep(retryDelay);
      }
    },
    async release(r, signal) {
      const l = leases.get(r.lease);
      if (!l) return { type: 'error', error: `no lease ${r.lease}` };
      const thrown = thrownOf(r);
      leases.delete(r.lease); // the lease is over, whatever the answer
      if (l.scope) {
        const bound = 2 * cmdTimeout + 4000;
        const res = await race(releaseLease(r, l, thrown, signal), bound);
        const raised = thrown ? { raised: !!res.error } : {};
        if (res.deadline) return { type: 'indeterminate', error: `the idiom had not left its scope ${bound} ms on`, ...raised };
        if (!res.error || res.error === thrown) return { type: 'released', ...raised };
        if (isRefusal(res.error)) return { type: 'not_owner', error: String(res.error.message), ...raised };
        return { type: unknownOutcome(res.error) ? 'indeterminate' : 'error', error: String(res.error.message), ...raised };
      }
      // An explicit lock: released as a finally does; a thrown error goes
      // on to the application.
      const raised = thrown ? { raised: true } : {};
      let ok;
      try {
        ok = await mode.release(r, l.data, signal);
      } catch (e) {
        if (!isRefusal(e)) return { type: unknownOutcome(e) ? 'indeterminate' : 'error', error: String(e && e.message), ...raised };
        ok = false;
      }
      return { type: ok ? 'released' : 'not_owner', ...raised };
    },
    async extend(r, signal) {
      if (!mode.extend) return { type: 'error', error: 'unsupported' };
      const l = leases.get(r.lease);
      return { type: (await mode.extend(r, l && l.data, signal)) ? 'extended' : 'not_owner' };
    },
  };

  // SIGTERM: the graceful shutdown (see the top of the file).
  process.on('SIGTERM', async () => {
    if (terminating) return;
    terminating = true;
    const work = [...inflight]; // the requests under way (a late win is released as they end)
    for (const s of scopes) {
      s.abandon();
      s.end();
      work.push(s.done);
    }
    for (const [id, l] of leases) if (!l.scope) work.push(Promise.resolve().then(() => mode.release({ type: 'release', lease: id }, l.data)));
    leases.clear();
    const deadline = Math.max(250, ttl || 1000);
    const finished = await Promise.race([Promise.allSettled(work).then(() => true), sleep(deadline).then(() => false)]);
    log(`SIGTERM: ${finished ? 'every critical section ended' : `the ${deadline} ms deadline came first`}; closing`);
    try {
      if (lock.close) await lock.close();
    } finally {
      process.exit(0);
    }
  });

  // The calls a cancel may give up, by request id, until answered; the
  // requests' handlers under way (SIGTERM waits for them).
  const open = new Map();
  const inflight = new Set();
  const cancellable = new Set(['acquire', 'release', 'extend']);
  const cancel = (req) => {
    const c = open.get(req.of);
    send({ in_reply_to: req.id, type: 'cancel_ok', delivered: !!c });
    if (c) c.abort();
  };
  readline.createInterface({ input }).on('line', async (text) => {
    let req;
    try {
      req = JSON.parse(text);
    } catch (e) {
      log(`bad request line: ${e.message}`);
      return;
    }
    if (req.type === 'ping') return send({ in_reply_to: req.id, type: 'pong', t0: now(), t1: now() });
    if (req.type === 'clock') return send({ in_reply_to: req.id, type: 'clock_ok', mono_ns: now(), wall_ns: Date.now() * 1e6 });
    if (req.type === 'cancel') return cancel(req);
    if (req.type === 'shutdown') {
      try {
        if (lock.close) await lock.close();
      } finally {
        send({ in_reply_to: req.id, type: 'shutdown_ok' });
        process.exit(0);
      }
    }
    const h = handlers[req.type];
    if (!h) return send({ in_reply_to: req.id, type: 'error', error: `unsupported: request type ${req.type}` });
    if (terminating) return send({ in_reply_to: req.id, type: 'error', error: 'shutting down (SIGTERM): not started' });
    const t0 = now();
    // One answer per request: the call's, or "cancelled" when a cancel's
    // abort wins the race (then the call's result is dropped).
    let answered = false;
    const answer = (o) => {
      if (answered) return false;
      answered = true;
      open.delete(req.id);
      send({ in_reply_to: req.id, t0, ...o, t1: now() });
      return true;
    };
    const ac = new AbortController();
    if (cancellable.has(req.type)) {
      open.set(req.id, ac);
      ac.signal.addEventListener('abort', () => {
        answer({ type: 'cancelled', error: 'aborted: the caller stopped waiting' });
        if (req.type === 'release') leases.delete(req.lease); // the application's lease is over
      }, { once: true });
    }
    let rep;
    let finish;
    const running = new Promise((r) => { finish = r; });
    inflight.add(running);
    try {
      rep = await h(req, ac.signal);
    } catch (e) {
      rep = { type: cancellable.has(req.type) && unknownOutcome(e) ? 'indeterminate' : 'error', error: String(e && e.message), ...(e && e.unavailable && { unavailable: true }) };
    }
    // Won after its caller left (a cancel), or while the process shuts
    // down (not answered then): released at once, as a careful application
    // cleans up a result it gave up on.
    let dropped;
    if (terminating && req.type === 'acquire') {
      answered = true;
      open.delete(req.id);
      dropped = true;
    } else {
      dropped = !answer(rep);
    }
    if (dropped) {
      log(`request ${req.id} (${req.type}), ${terminating ? 'under SIGTERM' : 'cancelled'}, ended: ${rep.type} (dropped)`);
      if (req.type === 'acquire' && rep.type === 'acquired') {
        const l = leases.get(rep.lease);
        leases.delete(rep.lease);
        if (l !== undefined) {
          await Promise.resolve().then(() => releaseLease(req, l)).then(
            (ok) => log(`request ${req.id}: its late lease ${rep.lease} released: ${ok === false ? 'not_owner' : 'released'}`),
            (e) => log(`request ${req.id}: its late lease ${rep.lease} not released: ${e && e.message}`));
        }
      }
    }
    inflight.delete(running);
    finish();
  });
  input.on('end', () => process.exit(0)); // lockchaos is gone
}

module.exports = { serve, now, sleep, unknownOutcome };
