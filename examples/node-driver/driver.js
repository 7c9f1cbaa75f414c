// A team's own lock (SET NX PX, Lua compare-and-delete over ioredis) as a
// lockchaos driver on the Node driver kit (npm install ./drivers/node/kit):
// the kit speaks the protocol (docs/driver-protocol.md); this is the lock.
const crypto = require('node:crypto');
const Redis = require('ioredis');
const { serve } = require('lockchaos-driver-kit');

// --- the team's lock helper, as it is in their service ---
const DEL_IF_OWNER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;
const lockHelper = (redis) => {
  const h = {
    async tryLock(key, ttlMs) {
      const token = crypto.randomBytes(16).toString('hex');
      return (await redis.set(key, token, 'PX', ttlMs, 'NX')) === 'OK' ? token : null;
    },
    async unlock(key, token) { return (await redis.eval(DEL_IF_OWNER, 1, key, token)) === 1; },
    async withLock(key, ttlMs, fn) { // the service's usual way in: false when taken
      const token = await h.tryLock(key, ttlMs);
      if (!token) return false;
      try { await fn(token); return true; } finally { await h.unlock(key, token); }
    },
  };
  return h;
};

// --- the driver: its calls, on the kit; each idiom the service uses is a mode ---
let redis, helper;
serve({
  hello: { name: 'my-node-lock', library: 'my-lock', version: '1.0.0' },
  async init(r) {
    const [host, port] = r.endpoints[0].addr.split(':');
    redis = new Redis({ host, port: +port, connectionName: r.conn_name, commandTimeout: r.options.command_timeout_ms, lazyConnect: true, maxRetriesPerRequest: 0 });
    redis.on('error', (e) => process.stderr.write(`redis: ${e.message}\n`));
    await redis.connect();
    helper = lockHelper(redis);
  },
  apis: { // api=with-lock (the default) or api=try-unlock
    'with-lock': { scoped: (r, body) => helper.withLock(r.key, r.ttl_ms, (token) => body({ key: r.key, token })) },
    'try-unlock': { // null: refused (the kit retries until wait_ms)
      acquire: async (r) => { const token = await helper.tryLock(r.key, r.ttl_ms); return token && { key: r.key, token }; },
      release: (r, lease) => helper.unlock(lease.key, lease.token),
    },
  },
  close: () => redis && redis.disconnect(),
});
