'use strict';
// A broken control for several clients in one process (the lock option
// tasks, docs/drivers.md): a team's lock helper that remembers the lock it
// holds in the module, as a helper written for a worker that handles one job
// at a time does. release() frees "the" lock: with one client a process it is
// the caller's, and the lock is correct; with several clients sharing the
// process (tasks=N, as a web server's handlers share it), it is the last one
// any of them took, often another client's, which it deletes while that
// client still holds it. Two lock files run it: shared-lease.yaml (a process
// each: valid) and shared-lease-tasks.yaml (tasks 4: caught).
const crypto = require('node:crypto');
const Redis = require('ioredis');
const { serve } = require('../kit');

const DEL_IF_OWNER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;
let redis;
let held = null; // the bug: one per process, not one per caller

serve({
  hello: { name: 'shared-lease', library: 'shared-lease', version: '1.0.0' },
  async init(r) {
    const [host, port] = r.endpoints[0].addr.split(':');
    redis = new Redis({ host, port: +port, connectionName: r.conn_name, commandTimeout: r.options.command_timeout_ms, lazyConnect: true, maxRetriesPerRequest: 0 });
    redis.on('error', (e) => process.stderr.write(`redis: ${e.message}\n`));
    await redis.connect();
  },
  async acquire(r) {
    const token = crypto.randomBytes(16).toString('hex');
    if ((await redis.set(r.key, token, 'PX', r.ttl_ms, 'NX')) !== 'OK') return null;
    held = { key: r.key, token };
    return { token };
  },
  async release() {
    const h = held;
    held = null;
    return h !== null && (await redis.eval(DEL_IF_OWNER, 1, h.key, h.token)) === 1;
  },
  async close() {
    redis.disconnect();
  },
});
