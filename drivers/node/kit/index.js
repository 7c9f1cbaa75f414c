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
// The kit answers ping and clock at once (Node's one thread is free while a
// call awaits), times each call (t0/t1 on the monotonic clock), keeps
// leases until a definite answer, retries an acquire until wait_ms when the
// lock answers null, and turns an error that is not a refusal or a server's
// ReplyError into indeterminate: the command may have run.
//
// It answers the protocol's cancel extension (hello lists "cancel") as a
// Node application gives up a call: it stops waiting (the call's promise
// loses a race with an AbortSignal's abort) and the call goes on
// unobserved; cancel_ok, then "cancelled" at once. What the call does
// after is dropped: an acquire that won (the kit's retries go on until
// wait_ms, as a library's wait would) is released at once and never kept
// as a lease, a cancelled release's lease is forgotten. The signal is the
// calls' last argument (acquire(req, signal), release(req, lease, signal),
// extend(req, lease, signal)) for a lock whose library takes one.
const readline = require('node:readline');

const ORIGIN = process.hrtime.bigint();
const now = () => Number(process.hrtime.bigint() - ORIGIN);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A timeout or a broken connection hides the server's answer; a ReplyError
// is the server's own (READONLY, NOSCRIPT, a script's error).
function unknownOutcome(err) {
  return !(err && err.name === 'ReplyError');
}

function serve(lock, input = process.stdin, output = process.stdout) {
  const send = (o) => output.write(JSON.stringify(o) + '\n');
  const leases = new Map();
  let n = 0;
  let retryDelay = 10;
  const handlers = {
    hello: async () => ({
      type: 'hello_ok', protocol: 1, language: 'node', capabilities: [], reports: [], options: [], ...lock.hello,
      extensions: [...new Set([...((lock.hello && lock.hello.extensions) || []), 'cancel'])],
    }),
    async init(r) {
      retryDelay = (r.options && r.options.retry_delay_ms) || retryDelay;
      await lock.init(r);
      return { type: 'init_ok' };
    },
    async acquire(r, signal) {
      const end = now() + (r.wait_ms || 0) * 1e6;
      for (;;) {
        let got = null;
        try {
          got = await lock.acquire(r, signal);
        } catch (e) {
          if (!(lock.isRefusal && lock.isRefusal(e))) throw e;
        }
        if (got) {
          const id = `L${++n}`;
          leases.set(id, got);
          const { token, keys, depth } = got;
          return { type: 'acquired', lease: id, depth: depth || 1, ...(token !== undefined && { token: String(token) }), ...(keys && { keys }) };
        }
        if (now() + retryDelay * 1e6 > end) return { type: 'not_acquired' };
        await sleep(retryDelay);
      }
    },
    async release(r, signal) {
      const l = leases.get(r.lease);
      if (!l) return { type: 'error', error: `no lease ${r.lease}` };
      let ok;
      try {
        ok = await lock.release(r, l, signal);
      } catch (e) {
        if (!(lock.isRefusal && lock.isRefusal(e))) throw e;
        ok = false;
      }
      leases.delete(r.lease); // a definite answer: the lease is over
      return { type: ok ? 'released' : 'not_owner' };
    },
    async extend(r, signal) {
      if (!lock.extend) return { type: 'error', error: 'unsupported' };
      const l = leases.get(r.lease);
      return { type: (await lock.extend(r, l, signal)) ? 'extended' : 'not_owner' };
    },
  };
  // The calls a cancel may give up, by request id, until answered.
  const open = new Map();
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
      process.stderr.write(`lockchaos driver: bad request line: ${e.message}\n`);
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
    try {
      rep = await h(req, ac.signal);
    } catch (e) {
      rep = { type: unknownOutcome(e) ? 'indeterminate' : 'error', error: String(e && e.message) };
    }
    if (!answer(rep)) {
      process.stderr.write(`lockchaos driver: request ${req.id} (${req.type}), cancelled, ended: ${rep.type} (dropped)\n`);
      if (req.type === 'acquire' && rep.type === 'acquired') {
        // Won after its caller left: released at once, as a careful
        // application cleans up a result it gave up on.
        const l = leases.get(rep.lease);
        leases.delete(rep.lease);
        if (l !== undefined) {
          Promise.resolve().then(() => lock.release(req, l)).then(
            (ok) => process.stderr.write(`lockchaos driver: request ${req.id}: its late lease ${rep.lease} released: ${ok ? 'released' : 'not_owner'}\n`),
            (e) => process.stderr.write(`lockchaos driver: request ${req.id}: its late lease ${rep.lease} not released: ${e && e.message}\n`));
        }
      }
    }
  });
  input.on('end', () => process.exit(0)); // lockchaos is gone
}

module.exports = { serve, now, sleep, unknownOutcome };
