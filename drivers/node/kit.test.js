'use strict';
// The driver kit installs with npm from the repository, on its own (no
// registry: it has no dependencies), and exports serve.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { execFileSync } = require('node:child_process');

test('npm installs the kit from its folder', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lc-kit-'));
  try {
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'a-team-driver', version: '1.0.0', private: true }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', path.join(__dirname, 'kit')], { cwd: dir, timeout: 120000 });
    const out = execFileSync('node', ['-e', "const k = require('lockchaos-driver-kit'); console.log(typeof k.serve, typeof k.now)"], { cwd: dir }).toString().trim();
    assert.equal(out, 'function function');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// --- the scoped-idiom hook: a team's withLock(key, fn) as a driver ---
const { startRedis, Driver, sleep, freePort } = require('./testing/harness');

// A driver on the kit whose idiom swallows the critical section's error
// (a helper that logs and carries on), with no API modes, and whose idiom
// for the key "lc:t:hang" never answers.
const SWALLOWING = `
const Redis = require(${JSON.stringify(require.resolve('ioredis'))});
const { serve } = require(${JSON.stringify(path.join(__dirname, 'kit'))});
let redis;
async function withLock(key, ttl, fn) {
  if (key === 'lc:t:hang') return new Promise(() => {});
  const token = String(Math.random());
  if ((await redis.set(key, token, 'PX', ttl, 'NX')) !== 'OK') return false;
  try { await fn(token); } catch (e) { process.stderr.write('swallowed: ' + e.message + '\\n'); }
  finally { await redis.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0", 1, key, token); }
  return true;
}
serve({
  hello: { name: 'swallowing', library: 'test', version: '0' },
  async init(r) { redis = new Redis({ port: +r.endpoints[0].addr.split(':')[1], connectionName: r.conn_name, lazyConnect: true }); await redis.connect(); },
  scoped: (r, body) => withLock(r.key, r.ttl_ms, (token) => body({ token })),
  close: () => redis.disconnect(),
});
`;

test('a kit driver whose init cannot reach its server answers error with unavailable', async () => {
  const port = await freePort(); // nothing listens there
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lc-kit-unreachable-'));
  fs.writeFileSync(path.join(dir, 'driver.js'), SWALLOWING);
  const d = new Driver([], {}, path.join(dir, 'driver.js'));
  try {
    await d.hello();
    const r = await d.init([{ addr: `127.0.0.1:${port}` }], { options: { command_timeout_ms: 100, ttl_ms: 1000 } });
    assert.deepEqual([r.type, r.unavailable], ['error', true], JSON.stringify(r));
  } finally {
    d.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a scoped idiom on the kit: modes, throw (raised false when the idiom swallows it), a bound on its wait, sigterm', async () => {
  const srv = await startRedis();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lc-kit-scoped-'));
  const ds = [];
  try {
    fs.writeFileSync(path.join(dir, 'driver.js'), SWALLOWING);
    const d = new Driver([], {}, path.join(dir, 'driver.js'));
    ds.push(d);
    const h = await d.hello();
    assert.equal(h.apis, undefined, 'no modes without apis');
    assert.ok(!h.options.includes('api'));
    assert.deepEqual([...h.extensions].sort(), ['cancel', 'reset', 'sigterm', 'tasks', 'throw']);
    assert.equal((await d.init([srv], { options: { command_timeout_ms: 100, ttl_ms: 1000 } })).type, 'init_ok');
    const r = await d.request({ type: 'acquire', key: 'lc:t:s1', ttl_ms: 5000, wait_ms: 0 });
    assert.equal(r.type, 'acquired', JSON.stringify(r));
    assert.equal(await srv.admin.get('lc:t:s1'), r.token);
    const rel = await d.request({ type: 'release', lease: r.lease, throw: 'oops' });
    assert.deepEqual([rel.type, rel.raised], ['released', false], JSON.stringify(rel));
    assert.match(d.stderr, /swallowed: oops/);
    assert.equal(await srv.admin.exists('lc:t:s1'), 0);
    // Held by another: the idiom returns false without entering, a
    // refusal, tried again until wait_ms.
    await srv.admin.set('lc:t:s2', 'other', 'PX', 5000);
    const ref = await d.request({ type: 'acquire', key: 'lc:t:s2', ttl_ms: 5000, wait_ms: 200 });
    assert.equal(ref.type, 'not_acquired', JSON.stringify(ref));
    assert.ok((ref.t1 - ref.t0) / 1e6 >= 150, 'it waited');
    // An idiom that never answers: indeterminate at wait_ms + 2 command
    // timeouts + 1 s.
    const hang = await d.request({ type: 'acquire', key: 'lc:t:hang', ttl_ms: 5000, wait_ms: 200 });
    const ms = (hang.t1 - hang.t0) / 1e6;
    assert.equal(hang.type, 'indeterminate', JSON.stringify(hang));
    assert.ok(ms >= 1350 && ms < 2500, `answered after ${ms} ms`);
    // SIGTERM with a lease held: released on the way out, exit 0.
    const held = await d.request({ type: 'acquire', key: 'lc:t:s3', ttl_ms: 20000, wait_ms: 0 });
    assert.equal(held.type, 'acquired');
    const t = Date.now();
    process.kill(d.proc.pid, 'SIGTERM');
    assert.equal(await d.exited, 0, d.stderr);
    assert.ok(Date.now() - t < 2500, `exited ${Date.now() - t} ms after SIGTERM`);
    assert.equal(await srv.admin.exists('lc:t:s3'), 0, 'released by the shutdown');

    // The worked example: two modes, the default first.
    const ex = new Driver([], {}, path.join(__dirname, '..', '..', 'examples', 'node-driver', 'driver.js'));
    ds.push(ex);
    const hx = await ex.hello();
    assert.deepEqual(hx.apis, ['with-lock', 'try-unlock']);
    assert.ok(hx.options.includes('api'));
    const yaml = fs.readFileSync(path.join(__dirname, '..', '..', 'examples', 'node-driver', 'my-lock.yaml'), 'utf8');
    assert.match(yaml, /^apis: \[with-lock, try-unlock\]/m, 'its lock file lists the same');
    assert.match(yaml, /^extensions: \[cancel, throw, sigterm, reset, tasks\]/m);
  } finally {
    ds.forEach((x) => x.kill());
    srv.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// tasks: several lockchaos clients in one process share the lock's
// library client: the lock's init runs once, for the first client; the
// others' inits are answered at once; their requests run side by side.
const COUNTING = `
const { serve, sleep } = require(${JSON.stringify(path.join(__dirname, 'kit'))});
let inits = 0;
const held = new Set();
serve({
  hello: { name: 'counting', library: 'test', version: '0' },
  async init() { inits++; },
  async acquire(r) {
    if (r.key === 'lc:t:inits') throw Object.assign(new Error('inits ' + inits), { name: 'ReplyError' });
    if (held.has(r.key)) return null;
    held.add(r.key);
    await sleep(100); // a slow call: another client's goes on meanwhile
    return { token: r.key };
  },
  async release(r, l) { return held.delete(l.token); },
});
`;

test('tasks: the clients of one process share the lock, one init, calls side by side', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lc-kit-tasks-'));
  fs.writeFileSync(path.join(dir, 'driver.js'), COUNTING);
  const d = new Driver([], {}, path.join(dir, 'driver.js'));
  try {
    assert.ok((await d.hello()).extensions.includes('tasks'));
    for (const client of [4, 5, 6]) assert.equal((await d.init([{ addr: '127.0.0.1:1' }], { client })).type, 'init_ok');
    const t = Date.now();
    const [a, b] = await Promise.all([
      d.request({ type: 'acquire', client: 4, key: 'lc:t:a', ttl_ms: 1000, wait_ms: 0 }),
      d.request({ type: 'acquire', client: 5, key: 'lc:t:b', ttl_ms: 1000, wait_ms: 0 }),
    ]);
    assert.deepEqual([a.type, b.type], ['acquired', 'acquired']);
    assert.notEqual(a.lease, b.lease, 'leases are named uniquely in the process');
    assert.ok(Date.now() - t < 190, `two 100 ms calls of two clients took ${Date.now() - t} ms: one after the other`);
    const n = await d.request({ type: 'acquire', client: 6, key: 'lc:t:inits', ttl_ms: 1000, wait_ms: 0 });
    assert.match(n.error || '', /inits 1$/, JSON.stringify(n));
    assert.equal((await d.request({ type: 'release', client: 5, lease: b.lease })).type, 'released');
  } finally {
    d.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
