// A team's own lock (SET NX PX, Lua compare-and-delete over ioredis) as a
// lockchaos driver: the lock-client protocol (docs/driver-protocol.md).
const readline = require('node:readline');
const crypto = require('node:crypto');
const Redis = require('ioredis');

// --- the team's lock helper, as it is in their service ---
const DEL_IF_OWNER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;
const lockHelper = (redis) => ({
  async tryLock(key, ttlMs) {
    const token = crypto.randomBytes(16).toString('hex');
    return (await redis.set(key, token, 'PX', ttlMs, 'NX')) === 'OK' ? token : null;
  },
  async unlock(key, token) { return (await redis.eval(DEL_IF_OWNER, 1, key, token)) === 1; },
});

// --- the driver: ~30 lines of protocol around it ---
const origin = process.hrtime.bigint();
const now = () => Number(process.hrtime.bigint() - origin);
const send = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let helper, redis, delay = 10, n = 0;
const leases = new Map();
const timedOut = (e) => !(e && e.name === 'ReplyError'); // no answer: outcome unknown

const handlers = {
  hello: () => ({ type: 'hello_ok', protocol: 1, name: 'my-node-lock', library: 'my-lock', version: '1.0.0', language: 'node', capabilities: [], reports: [], options: [] }),
  async init(r) {
    const [host, port] = r.endpoints[0].addr.split(':');
    redis = new Redis({ host, port: +port, connectionName: r.conn_name, commandTimeout: r.options.command_timeout_ms, lazyConnect: true });
    redis.on('error', (e) => process.stderr.write(`redis: ${e.message}\n`));
    await redis.connect();
    helper = lockHelper(redis);
    delay = r.options.retry_delay_ms || 10;
    return { type: 'init_ok' };
  },
  async acquire(r) {
    const end = now() + r.wait_ms * 1e6;
    for (;;) {
      const token = await helper.tryLock(r.key, r.ttl_ms);
      if (token) { leases.set(`L${++n}`, { key: r.key, token }); return { type: 'acquired', lease: `L${n}`, token, depth: 1 }; }
      if (now() + delay * 1e6 > end) return { type: 'not_acquired' };
      await sleep(delay);
    }
  },
  async release(r) {
    const l = leases.get(r.lease);
    leases.delete(r.lease);
    return { type: (await helper.unlock(l.key, l.token)) ? 'released' : 'not_owner' };
  },
  extend: () => ({ type: 'error', error: 'unsupported' }),
};

readline.createInterface({ input: process.stdin }).on('line', async (text) => {
  const req = JSON.parse(text);
  if (req.type === 'ping') return send({ in_reply_to: req.id, type: 'pong', t0: now(), t1: now() });
  if (req.type === 'clock') return send({ in_reply_to: req.id, type: 'clock_ok', mono_ns: now(), wall_ns: Date.now() * 1e6 });
  if (req.type === 'shutdown') { send({ in_reply_to: req.id, type: 'shutdown_ok' }); redis && redis.disconnect(); process.exit(0); }
  const t0 = now();
  try {
    send({ in_reply_to: req.id, t0, ...(await handlers[req.type](req)), t1: now() });
  } catch (e) {
    send({ in_reply_to: req.id, type: timedOut(e) ? 'indeterminate' : 'error', error: e.message, t0, t1: now() });
  }
});
