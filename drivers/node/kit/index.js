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
    hello: async () => ({ type: 'hello_ok', protocol: 1, language: 'node', capabilities: [], reports: [], options: [], ...lock.hello }),
    async init(r) {
      retryDelay = (r.options && r.options.retry_delay_ms) || retryDelay;
      await lock.init(r);
      return { type: 'init_ok' };
    },
    async acquire(r) {
      const end = now() + (r.wait_ms || 0) * 1e6;
      for (;;) {
        let got = null;
        try {
          got = await lock.acquire(r);
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
    async release(r) {
      const l = leases.get(r.lease);
      if (!l) return { type: 'error', error: `no lease ${r.lease}` };
      let ok;
      try {
        ok = await lock.release(r, l);
      } catch (e) {
        if (!(lock.isRefusal && lock.isRefusal(e))) throw e;
        ok = false;
      }
      leases.delete(r.lease); // a definite answer: the lease is over
      return { type: ok ? 'released' : 'not_owner' };
    },
    async extend(r) {
      if (!lock.extend) return { type: 'error', error: 'unsupported' };
      const l = leases.get(r.lease);
      return { type: (await lock.extend(r, l)) ? 'extended' : 'not_owner' };
    },
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
    try {
      send({ in_reply_to: req.id, t0, ...(await h(req)), t1: now() });
    } catch (e) {
      send({ in_reply_to: req.id, type: unknownOutcome(e) ? 'indeterminate' : 'error', error: String(e && e.message), t0, t1: now() });
    }
  });
  input.on('end', () => process.exit(0)); // lockchaos is gone
}

module.exports = { serve, now, sleep, unknownOutcome };
