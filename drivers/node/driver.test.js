'use strict';
// The Node drivers against real redis-server processes, spoken to in the
// protocol (docs/driver-protocol.md):  node --test drivers/node
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const { startRedis, Driver, sleep, freePort } = require('./testing/harness');

const LOCKS = ['node-redlock', 'sesamecare-redlock', 'redis-semaphore-mutex', 'redis-semaphore-redlock'];
const EXAMPLE = path.resolve(__dirname, '..', '..', 'examples', 'node-driver', 'driver.js');

let shared; // one redis-server for the tests that do not fault it
const drivers = [];
function driver(lock, opts = [], env = {}) {
  const d = lock === 'example' ? new Driver([], env, EXAMPLE) : new Driver(['--lock', lock, ...opts], env);
  drivers.push(d);
  return d;
}
// ready starts a driver and says hello and init.
async function ready(lock, servers, init = {}, opts = []) {
  const d = driver(lock, opts);
  await d.hello();
  const r = await d.init(servers, init);
  assert.equal(r.type, 'init_ok', `${lock}: ${JSON.stringify(r)}`);
  return d;
}
let keyN = 0;
// whileStopped runs fn with the servers SIGSTOPped, and continues them after.
async function whileStopped(srvs, fn) {
  srvs.forEach((s) => process.kill(s.proc.pid, 'SIGSTOP'));
  try {
    return await fn();
  } finally {
    srvs.forEach((s) => process.kill(s.proc.pid, 'SIGCONT'));
  }
}
const newKey = () => `lc:t:k${++keyN}`;

test.before(async () => { shared = await startRedis(); });
test.after(() => {
  drivers.forEach((d) => d.kill());
  if (shared) shared.stop();
});

test('hello names the lock, the library and its installed version', async () => {
  const pinned = require('./package.json').dependencies;
  const missing = driver('redis-semaphore-mutex');
  const plainD = driver('node-redlock', ['--opt', 'auto_extend=false']);
  await Promise.all(LOCKS.map(async (lock) => {
    const h = await driver(lock).hello();
    assert.equal(h.type, 'hello_ok', JSON.stringify(h));
    assert.equal(h.in_reply_to, 1);
    assert.equal(h.protocol, 1);
    assert.equal(h.name, lock);
    assert.equal(h.language, 'node');
    assert.ok(pinned[h.library], `library ${h.library} is one of package.json's`);
    assert.equal(h.version, pinned[h.library], `${lock}: the installed version is the pinned one`);
    assert.ok(h.capabilities.includes('renews'), `${lock} renews by default`);
    assert.equal(h.capabilities.includes('multi-node'), lock !== 'redis-semaphore-mutex');
    assert.ok(h.options.includes('version'));
  }));
  await missing.hello();
  const r = await missing.init([shared], { extra: { version: '0.0.0-not-installed' } });
  assert.equal(r.type, 'error');
  assert.match(r.error, /scripts\/drivers-node\.sh --version redis-semaphore@0\.0\.0-not-installed/);
  const plain = await plainD.hello();
  assert.deepEqual(plain.capabilities, ['multi-node']);
  assert.deepEqual(plain.reports, ['deadline']);
});

test('an init whose server cannot be reached is an error with unavailable; a refused option is not', async () => {
  const addr = `127.0.0.1:${await freePort()}`; // nothing listens there
  const d = driver('node-redlock');
  await d.hello();
  const r = await d.init([{ addr }]);
  assert.deepEqual([r.type, r.unavailable], ['error', true], JSON.stringify(r));
  const e = driver('node-redlock');
  await e.hello();
  const o = await e.init([{ addr }], { extra: { colour: 'blue' } });
  assert.deepEqual([o.type, o.unavailable], ['error', undefined], JSON.stringify(o));
});

test('two driver processes contend: one holds, the other is refused, then gets it', async () => {
  await Promise.all([...LOCKS, 'example'].map(async (lock) => {
    const a = driver(lock);
    const b = driver(lock);
    await a.hello();
    await b.hello();
    assert.equal((await a.init([shared], { client: 1 })).type, 'init_ok');
    assert.equal((await b.init([shared], { client: 2 })).type, 'init_ok');
    const key = newKey();
    const ra = await a.request({ type: 'acquire', key, ttl_ms: 2000, wait_ms: 0 });
    assert.equal(ra.type, 'acquired', `${lock}: ${JSON.stringify(ra)}`);
    assert.ok(ra.t1 >= ra.t0 && Number.isSafeInteger(ra.t0), `${lock}: t0 ${ra.t0} <= t1 ${ra.t1}`);
    const rb = await b.request({ type: 'acquire', key, ttl_ms: 2000, wait_ms: 0 });
    assert.equal(rb.type, 'not_acquired', `${lock}: ${JSON.stringify(rb)}`);
    const wb = b.request({ type: 'acquire', key, ttl_ms: 2000, wait_ms: 1500 });
    await sleep(100);
    assert.equal((await a.request({ type: 'release', lease: ra.lease })).type, 'released');
    const rb2 = await wb;
    assert.equal(rb2.type, 'acquired', `${lock}: the waiter gets it after the release: ${JSON.stringify(rb2)}`);
    assert.notEqual(rb2.token, ra.token);
    assert.equal((await b.request({ type: 'release', lease: rb2.lease })).type, 'released');
    assert.equal((await a.request({ type: 'shutdown' })).type, 'shutdown_ok');
    assert.equal(await a.exited, 0);
  }));
});

test('tasks: two clients share one process and its library client; a waiting acquire of one does not hold up the other', async () => {
  await Promise.all(LOCKS.map(async (lock) => {
    const d = await ready(lock, [shared], { client: 1 });
    const first = d.connName;
    assert.equal((await d.init([shared], { client: 2 })).type, 'init_ok', `${lock}: the second client's init`);
    const list = await shared.admin.client('LIST');
    assert.equal(list.split('\n').filter((l) => l.includes(` name=${first} `)).length, 1, `${lock}: one library connection for both clients`);
    assert.ok(!list.includes(` name=${d.connName} `), `${lock}: the second client's init connected again`);
    const [k1, k2] = [newKey(), newKey()];
    const a = await d.request({ type: 'acquire', client: 1, key: k1, ttl_ms: 5000, wait_ms: 0 });
    assert.equal(a.type, 'acquired', `${lock}: ${JSON.stringify(a)}`);
    // Client 2 waits for k1 (held by client 1) while client 1 takes k2.
    const waiting = d.request({ type: 'acquire', client: 2, key: k1, ttl_ms: 5000, wait_ms: 1500 });
    const t = Date.now();
    const b = await d.request({ type: 'acquire', client: 1, key: k2, ttl_ms: 5000, wait_ms: 0 });
    assert.equal(b.type, 'acquired', `${lock}: ${JSON.stringify(b)}`);
    assert.ok(Date.now() - t < 1000, `${lock}: client 1's acquire waited ${Date.now() - t} ms behind client 2's`);
    assert.notEqual(a.lease, b.lease);
    assert.equal((await d.request({ type: 'release', client: 1, lease: a.lease })).type, 'released', lock);
    const w = await waiting;
    assert.equal(w.type, 'acquired', `${lock}: client 2 gets k1 after client 1's release: ${JSON.stringify(w)}`);
    for (const [c, l] of [[1, b.lease], [2, w.lease]]) assert.equal((await d.request({ type: 'release', client: c, lease: l })).type, 'released', lock);
    await d.request({ type: 'shutdown' });
  }));
});

test('the driver\'s connection carries conn_name (CLIENT LIST)', async () => {
  await Promise.all(LOCKS.map(async (lock) => {
    const d = await ready(lock, [shared]);
    const list = await shared.admin.client('LIST');
    const mine = list.split('\n').filter((l) => l.includes(` name=${d.connName} `));
    assert.equal(mine.length, 1, `${lock}: one connection named ${d.connName} in\n${list}`);
    await d.request({ type: 'shutdown' });
  }));
});

test('reset (warm drivers): refused while a lease is held; after it a fresh init on new connections locks again', async () => {
  await Promise.all(LOCKS.map(async (lock) => {
    const d = await ready(lock, [shared], { client: 1 });
    const first = d.connName;
    const key = newKey();
    const r = await d.request({ type: 'acquire', key, ttl_ms: 5000, wait_ms: 0 });
    assert.equal(r.type, 'acquired', `${lock}: ${JSON.stringify(r)}`);
    const refused = await d.request({ type: 'reset' });
    assert.ok(refused.type === 'error' && /leases held/.test(refused.error), `${lock}: ${JSON.stringify(refused)}`);
    assert.equal((await d.request({ type: 'release', lease: r.lease })).type, 'released', lock);
    assert.equal((await d.request({ type: 'reset' })).type, 'reset_ok', lock);
    assert.equal((await d.init([shared], { client: 2 })).type, 'init_ok', lock);
    const r2 = await d.request({ type: 'acquire', key, ttl_ms: 5000, wait_ms: 0 });
    assert.equal(r2.type, 'acquired', `${lock}: ${JSON.stringify(r2)}`);
    const list = await shared.admin.client('LIST');
    assert.ok(!list.includes(` name=${first} `), `${lock}: the first run's connection ${first} is still open:\n${list}`);
    assert.ok(list.includes(` name=${d.connName} `), `${lock}: no connection named ${d.connName}`);
    assert.equal((await d.request({ type: 'release', lease: r2.lease })).type, 'released', lock);
    await d.request({ type: 'shutdown' });
  }));
});

test('release after the lease expired is not_owner (no renewal)', async () => {
  const cases = [
    ['node-redlock', ['--opt', 'auto_extend=false']],
    ['sesamecare-redlock', ['--opt', 'auto_extend=false']],
    ['redis-semaphore-mutex', ['--opt', 'renew_interval_ms=0']],
    ['redis-semaphore-redlock', ['--opt', 'renew_interval_ms=0']],
  ];
  await Promise.all(cases.map(async ([lock, opts]) => {
    const d = driver(lock, opts);
    const h = await d.hello();
    assert.ok(!h.capabilities.includes('renews'), `${lock} ${opts}: ${h.capabilities}`);
    await d.init([shared]);
    const key = newKey();
    const r = await d.request({ type: 'acquire', key, ttl_ms: 150, wait_ms: 0 });
    assert.equal(r.type, 'acquired');
    if (r.deadline_ns !== undefined) {
      // The library's validity: TTL minus drift (0.01 TTL + 2 ms) from the
      // attempt's start, which is between t0 and t1 (Date.now: 1 ms steps).
      const fromT0 = (r.deadline_ns - r.t0) / 1e6;
      const fromT1 = (r.deadline_ns - r.t1) / 1e6;
      assert.ok(fromT0 >= 150 - 4 - 1 && fromT1 <= 150 - 4 + 1, `${lock}: deadline t0+${fromT0} ms, t1+${fromT1} ms of a 150 ms lease`);
    }
    await sleep(300);
    const rel = await d.request({ type: 'release', lease: r.lease });
    assert.equal(rel.type, 'not_owner', `${lock}: ${JSON.stringify(rel)}`);
  }));
  // extend, where the library has it: refused once the key is gone.
  const d = await ready('node-redlock', [shared], {}, ['--opt', 'auto_extend=false']);
  const key = newKey();
  const r = await d.request({ type: 'acquire', key, ttl_ms: 1000, wait_ms: 0 });
  // The library's validity is counted in Date.now's 1 ms steps from each
  // attempt's start: an extend in the same millisecond gives the same
  // deadline. 20 ms apart, the extended one is later by about that much.
  await sleep(20);
  const e = await d.request({ type: 'extend', lease: r.lease, ttl_ms: 1000 });
  assert.equal(e.type, 'extended');
  assert.ok(e.deadline_ns - r.deadline_ns >= 15e6, `extend moved the deadline ${(e.deadline_ns - r.deadline_ns) / 1e6} ms`);
  await shared.admin.del(key);
  assert.equal((await d.request({ type: 'extend', lease: r.lease, ttl_ms: 1000 })).type, 'not_owner');
});

test('renewing locks keep the lease past its TTL and push each renewal', async () => {
  await Promise.all(LOCKS.map(async (lock) => {
    // The lock option: redis-semaphore's own interval is 0.8 of the TTL,
    // redlock's using() extends 500 ms (at most ttl - 100) before expiry.
    const d = await ready(lock, [shared], {}, ['--opt', 'renew_interval_ms=100']);
    const key = newKey();
    const r = await d.request({ type: 'acquire', key, ttl_ms: 300, wait_ms: 0 });
    assert.equal(r.type, 'acquired');
    await sleep(700);
    const rk = r.redis_key || key;
    assert.equal(await shared.admin.get(rk), r.token, `${lock}: the key outlived its 300 ms TTL`);
    const ren = d.events.filter((e) => e.type === 'renewal' && e.lease === r.lease);
    assert.ok(ren.length >= 3, `${lock}: ${ren.length} renewals pushed in 700 ms at 100 ms`);
    assert.ok(ren.every((e) => e.outcome === 'ok' && e.t1 >= e.t0), JSON.stringify(ren));
    assert.equal((await d.request({ type: 'release', lease: r.lease })).type, 'released');
    assert.equal(await shared.admin.exists(rk), 0);
  }));
});

test('a renewing lock whose key is taken away pushes lost', async () => {
  await Promise.all(LOCKS.map(async (lock) => {
    const d = await ready(lock, [shared], { options: { renew_interval_ms: 100 } });
    const key = newKey();
    const r = await d.request({ type: 'acquire', key, ttl_ms: 400, wait_ms: 0 });
    await shared.admin.set(r.redis_key || key, 'someone-else', 'PX', 5000);
    const t = Date.now();
    // using() aborts its signal once an extension failed and the lease
    // expired; the refused extension itself retries 10 times 200 ms (the
    // library's default retryCount and retryDelay): about 2 s.
    while (!d.events.some((e) => e.type === 'lost') && Date.now() - t < 5000) await sleep(20);
    const lost = d.events.find((e) => e.type === 'lost');
    assert.ok(lost, `${lock}: no lost event; events ${JSON.stringify(d.events)}`);
    assert.equal(lost.lease, r.lease);
    // The refused renewal is pushed once its attempts are classified,
    // which may come just after the lost.
    const refused = () => d.events.some((e) => e.type === 'renewal' && e.outcome === 'not_owner');
    assert.ok(await until(refused, 1000), `${lock}: ${JSON.stringify(d.events)}`);
    assert.equal((await d.request({ type: 'release', lease: r.lease })).type, 'not_owner');
  }));
});

test('ping and clock are answered while an acquire waits', async () => {
  const a = await ready('node-redlock', [shared]);
  const b = await ready('node-redlock', [shared], { client: 2 });
  const key = newKey();
  await a.request({ type: 'acquire', key, ttl_ms: 3000, wait_ms: 0 });
  const sent = Date.now();
  const waiting = b.request({ type: 'acquire', key, ttl_ms: 3000, wait_ms: 1000 });
  await sleep(100);
  const pong = await b.request({ type: 'ping' }, 500);
  const clock = await b.request({ type: 'clock' }, 500);
  assert.equal(pong.type, 'pong');
  assert.equal(clock.type, 'clock_ok');
  assert.ok(Math.abs(clock.wall_ns / 1e6 - Date.now()) < 1000, `wall_ns ${clock.wall_ns}`);
  const acq = await waiting;
  assert.equal(acq.type, 'not_acquired');
  assert.ok(pong.at < acq.at, 'the pong came before the acquire ended');
  const waited = (acq.t1 - acq.t0) / 1e6;
  assert.ok(waited >= 900 && waited < 1500, `acquire waited ${waited} ms of wait_ms 1000 (${Date.now() - sent} ms seen)`);
});

test('block_loop holds the event loop: the lease is not renewed and is lost', async () => {
  const d = await ready('node-redlock', [shared], { options: { renew_interval_ms: 100 } });
  const key = newKey();
  const r = await d.request({ type: 'acquire', key, ttl_ms: 300, wait_ms: 0 });
  const blockP = d.request({ type: 'block_loop', ms: 700 });
  await sleep(50);
  const pingP = d.request({ type: 'ping' });
  const blk = await blockP;
  const pong = await pingP;
  assert.equal(blk.type, 'block_loop_ok');
  assert.ok((blk.t1 - blk.t0) / 1e6 >= 700);
  assert.ok(pong.t0 >= blk.t1, 'the ping waited for the loop');
  assert.equal(await shared.admin.exists(key), 0, 'the key expired while the loop was blocked');
  const t = Date.now();
  while (!d.events.some((e) => e.type === 'lost') && Date.now() - t < 1000) await sleep(20);
  assert.ok(d.events.some((e) => e.type === 'lost' && e.lease === r.lease), JSON.stringify(d.events));
});

test('a SIGSTOPped server past the command timeout gives indeterminate, not a refusal', async () => {
  const srv = await startRedis();
  try {
    const locks = [...LOCKS, 'example'];
    const ds = await Promise.all(locks.map((lock) => ready(lock, [srv], { options: { command_timeout_ms: 200 } }, lock.startsWith('redis-semaphore') ? ['--opt', 'renew_interval_ms=0'] : [])));
    for (const [i, lock] of locks.entries()) {
      const d = ds[i];
      const key = newKey();
      // 1 s: redlock's using() release waits for its in-flight extension,
      // which retries until the lease expires.
      const held = await d.request({ type: 'acquire', key, ttl_ms: 1000, wait_ms: 0 });
      await whileStopped([srv], async () => {
        const r = await d.request({ type: 'acquire', key: newKey(), ttl_ms: 5000, wait_ms: 0 });
        assert.equal(r.type, 'indeterminate', `${lock} acquire: ${JSON.stringify(r)}`);
        assert.ok((r.t1 - r.t0) / 1e6 >= 190, `${lock}: answered after ${(r.t1 - r.t0) / 1e6} ms`);
        const rel = await d.request({ type: 'release', lease: held.lease });
        assert.equal(rel.type, 'indeterminate', `${lock} release: ${JSON.stringify(rel)}`);
      });
      await d.request({ type: 'shutdown' });
    }
  } finally {
    srv.stop();
  }
});

test('independent masters: a quorum holds; refusals are definite, silence is not', async () => {
  const srvs = await Promise.all([startRedis(), startRedis(), startRedis()]);
  try {
    const locks = ['node-redlock', 'sesamecare-redlock', 'redis-semaphore-redlock'];
    const pairs = await Promise.all(locks.map((lock) => {
      const noRenew = lock.startsWith('redis-semaphore') ? ['--opt', 'renew_interval_ms=0'] : ['--opt', 'auto_extend=false'];
      return Promise.all([1, 2].map((client) => ready(lock, srvs, { client, options: { command_timeout_ms: 200 } }, noRenew)));
    }));
    for (const [i, lock] of locks.entries()) {
      const [a, b] = pairs[i];
      const key = newKey();
      const rk = (r) => r.redis_key || key;
      // One master stopped: 2 of 3 still make a quorum.
      const r = await whileStopped([srvs[2]], () => a.request({ type: 'acquire', key, ttl_ms: 5000, wait_ms: 0 }));
      assert.equal(r.type, 'acquired', `${lock}: ${JSON.stringify(r)}`);
      assert.equal(await srvs[0].admin.get(rk(r)), r.token);
      assert.equal(await srvs[1].admin.get(rk(r)), r.token);
      // Another client: refused by two masters (a quorum of no's), the
      // third stopped: definite, not indeterminate.
      await srvs[2].admin.del(rk(r));
      const rb = await whileStopped([srvs[2]], () => b.request({ type: 'acquire', key, ttl_ms: 5000, wait_ms: 0 }));
      assert.equal(rb.type, 'not_acquired', `${lock}: ${JSON.stringify(rb)}`);
      // Two masters stopped: one yes cannot be a quorum nor can one no.
      const key2 = newKey();
      const rc = await whileStopped(srvs.slice(1), () => b.request({ type: 'acquire', key: key2, ttl_ms: 5000, wait_ms: 0 }));
      assert.equal(rc.type, 'indeterminate', `${lock}: ${JSON.stringify(rc)}`);
      assert.equal((await a.request({ type: 'release', lease: r.lease })).type, 'released');
      await a.request({ type: 'shutdown' });
      await b.request({ type: 'shutdown' });
    }
  } finally {
    srvs.forEach((s) => s.stop());
  }
});

test('the worked example is installed (scripts/drivers-node.sh)', () => {
  for (const dep of ['ioredis', 'lockchaos-driver-kit']) {
    assert.ok(fs.existsSync(path.join(path.dirname(EXAMPLE), 'node_modules', dep)), `${dep}: run scripts/drivers-node.sh`);
  }
});

test('libfaketime shifts the driver\'s clocks: the wall clock from the start, both clocks in flight', async (t) => {
  const so = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
  if (!fs.existsSync(so)) {
    t.skip(`${so} missing (apt-get install faketime libfaketime)`);
    return;
  }
  const file = path.join(fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'lc-faketime-')), 'offset');
  fs.writeFileSync(file, '+5s\n');
  const d = new Driver(['--lock', 'node-redlock'], { LD_PRELOAD: so, FAKETIME_TIMESTAMP_FILE: file, FAKETIME_NO_CACHE: '1' });
  drivers.push(d);
  // The driver's clocks against this process's, read around the request.
  const read = async () => {
    const h0 = process.hrtime.bigint();
    const w0 = Date.now();
    const c = await d.request({ type: 'clock' });
    const h1 = process.hrtime.bigint();
    return { wallSkewMs: c.wall_ns / 1e6 - (w0 + Date.now()) / 2, mono: c.mono_ns, ours: Number((h0 + h1) / 2n), rttMs: Number(h1 - h0) / 1e6 };
  };
  await d.hello();
  const a = await read();
  assert.ok(Math.abs(a.wallSkewMs - 5000) < 50 + a.rttMs, `wall skew ${a.wallSkewMs} ms, want +5000`);
  fs.writeFileSync(file, '+20s\n');
  const b = await read();
  assert.ok(Math.abs(b.wallSkewMs - 20000) < 50 + b.rttMs, `wall skew ${b.wallSkewMs} ms after the change, want +20000`);
  const monoJump = ((b.mono - a.mono) - (b.ours - a.ours)) / 1e6;
  assert.ok(Math.abs(monoJump - 15000) < 50 + a.rttMs + b.rttMs, `monotonic jumped ${monoJump} ms, want +15000`);
});

// --- the cancel extension (docs/driver-protocol.md, "cancel") ---

// answers: the lines d wrote in reply to request id, in order.
const answers = (d, id) => d.lines.filter((l) => l.in_reply_to === id);
// until polls cond every 20 ms, at most ms.
async function until(cond, ms) {
  const t = Date.now();
  while (!cond() && Date.now() - t < ms) await sleep(20);
  return cond();
}

test('hello lists the cancel, throw, sigterm, reset and tasks extensions, as the lock files do', async () => {
  await Promise.all([...LOCKS, 'example'].map(async (lock) => {
    const h = await driver(lock).hello();
    assert.ok(Array.isArray(h.extensions) && h.extensions.includes('cancel'), `${lock}: extensions ${JSON.stringify(h.extensions)}`);
    if (lock === 'example') return;
    assert.deepEqual([...h.extensions].sort(), ['block_loop', 'cancel', 'reset', 'sigterm', 'tasks', 'throw']);
    // The lock file must say the same (lockimpl/driver/locker.go checks it).
    const yaml = fs.readFileSync(path.join(__dirname, `${lock}.yaml`), 'utf8');
    const m = yaml.match(/^extensions:\s*\[([^\]]*)\]/m);
    assert.ok(m, `${lock}.yaml has an extensions: line`);
    assert.deepEqual(m[1].split(',').map((x) => x.trim()).filter(Boolean).sort(), [...h.extensions].sort(), `${lock}.yaml`);
  }));
});

test('a contended acquire cancelled while it waits answers cancelled at once; the next request runs', async (tc) => {
  await Promise.all([...LOCKS, 'example'].map(async (lock) => {
    const holder = await ready(lock, [shared], { client: 1 });
    const d = await ready(lock, [shared], { client: 2 });
    const key = newKey();
    const held = await holder.request({ type: 'acquire', key, ttl_ms: 10000, wait_ms: 0 });
    assert.equal(held.type, 'acquired', `${lock}: ${JSON.stringify(held)}`);
    const sent = Date.now();
    const acqP = d.request({ type: 'acquire', key, ttl_ms: 2000, wait_ms: 3000 });
    const acqId = d.id;
    await sleep(100);
    const okP = d.request({ type: 'cancel', of: acqId }, 1000);
    const cancelId = d.id;
    const ok = await okP;
    const acq = await acqP;
    assert.equal(ok.type, 'cancel_ok', `${lock}: ${JSON.stringify(ok)}`);
    assert.equal(ok.delivered, true, `${lock}: ${JSON.stringify(ok)}`);
    assert.equal(acq.type, 'cancelled', `${lock}: ${JSON.stringify(acq)}`);
    assert.match(acq.error, /abort/);
    assert.ok(d.lines.indexOf(ok) < d.lines.indexOf(acq), `${lock}: cancel_ok before the acquire's answer`);
    const took = acq.at - sent;
    const callMs = (acq.t1 - acq.t0) / 1e6;
    assert.ok(took < 1000, `${lock}: cancelled ${took} ms after the acquire was sent (wait_ms 3000)`);
    // t0..t1 from the call's start in the driver to the cancel (each line
    // crosses the pipe with its own delay, under ten processes' load).
    assert.ok(callMs >= 40 && callMs < 1000, `${lock}: the cancelled call's t0..t1 ${callMs} ms`);
    // The next request runs now, not after the abandoned call.
    const other = newKey();
    const t = Date.now();
    const next = await d.request({ type: 'acquire', key: other, ttl_ms: 2000, wait_ms: 0 }, 2000);
    assert.equal(next.type, 'acquired', `${lock}: ${JSON.stringify(next)}`);
    assert.ok(Date.now() - t < 1000, `${lock}: the next acquire took ${Date.now() - t} ms`);
    assert.equal((await d.request({ type: 'release', lease: next.lease })).type, 'released');
    // The library's (or the driver's) wait ends at wait_ms; its result is
    // dropped: nothing more for the cancelled id.
    const ended = await until(() => /cancelled, ended: not_acquired/.test(d.stderr), 3000 + 2000 - (Date.now() - sent));
    assert.ok(ended, `${lock}: the abandoned call ended (stderr: ${d.stderr})`);
    const endedMs = Date.now() - sent;
    await sleep(200);
    assert.equal(answers(d, acqId).length, 1, `${lock}: one answer for the cancelled acquire: ${JSON.stringify(answers(d, acqId))}`);
    assert.equal(answers(d, cancelId).length, 1, `${lock}: one cancel_ok`);
    tc.diagnostic(`${lock}: cancel sent +100 ms, cancel_ok +${ok.at - sent} ms, cancelled +${took} ms (call ${callMs.toFixed(1)} ms), next acquire ${next.at - t} ms, abandoned call ended +${endedMs} ms`);
    assert.equal((await holder.request({ type: 'release', lease: held.lease })).type, 'released');
    await holder.request({ type: 'shutdown' });
    await d.request({ type: 'shutdown' });
  }));
});

test('a cancelled acquire that wins after all is released at once, never kept as a lease', async () => {
  await Promise.all(['node-redlock', 'sesamecare-redlock', 'redis-semaphore-mutex', 'example'].map(async (lock) => {
    const holder = await ready(lock, [shared], { client: 1 });
    const d = await ready(lock, [shared], { client: 2 });
    const key = newKey();
    const held = await holder.request({ type: 'acquire', key, ttl_ms: 10000, wait_ms: 0 });
    const rk = held.redis_key || key;
    const acqP = d.request({ type: 'acquire', key, ttl_ms: 1000, wait_ms: 3000 });
    const acqId = d.id;
    await sleep(100);
    const ok = await d.request({ type: 'cancel', of: acqId });
    assert.equal(ok.delivered, true);
    assert.equal((await acqP).type, 'cancelled');
    // The holder lets go: the abandoned wait takes the key, for nobody.
    assert.equal((await holder.request({ type: 'release', lease: held.lease })).type, 'released');
    assert.ok(await until(() => /cancelled, ended: acquired/.test(d.stderr), 2000), `${lock}: the abandoned acquire won (stderr: ${d.stderr})`);
    // (It holds the key for the moment its release takes: too short to read here.)
    // Released at once by the driver (the application's cleanup of a late
    // result), well before its 1 s TTL; nothing is pushed or answered for it.
    let freed = false;
    for (const t = Date.now(); !freed && Date.now() - t < 800; await sleep(20)) freed = (await shared.admin.get(rk)) === null;
    assert.ok(freed, `${lock}: the late lease was released (stderr: ${d.stderr})`);
    assert.match(d.stderr, /its late lease \S* ?released/, `${lock}: stderr says so`);
    await sleep(200);
    assert.equal(answers(d, acqId).length, 1, JSON.stringify(answers(d, acqId)));
    assert.deepEqual(d.events, [], `${lock}: nothing pushed for a lease nobody has`);
    const again = await d.request({ type: 'acquire', key, ttl_ms: 1000, wait_ms: 0 });
    assert.equal(again.type, 'acquired', `${lock}: ${JSON.stringify(again)}`);
    assert.equal((await d.request({ type: 'release', lease: again.lease })).type, 'released');
    await d.request({ type: 'shutdown' });
    await holder.request({ type: 'shutdown' });
    await shared.admin.del(rk);
  }));
});

test('a cancel of a request that waits its turn: not started, and a release\'s lease is forgotten', async () => {
  const holder = await ready('node-redlock', [shared], { client: 1 });
  const d = await ready('node-redlock', [shared], { client: 2 });
  const mine = newKey();
  const lease = await d.request({ type: 'acquire', key: mine, ttl_ms: 5000, wait_ms: 0 });
  assert.equal(lease.type, 'acquired');
  const key = newKey();
  const held = await holder.request({ type: 'acquire', key, ttl_ms: 10000, wait_ms: 0 });
  // Requests come one at a time from lockchaos; sent together here, the
  // release waits behind the acquire.
  const acqP = d.request({ type: 'acquire', key, ttl_ms: 2000, wait_ms: 3000 });
  const acqId = d.id;
  const relP = d.request({ type: 'release', lease: lease.lease });
  const relId = d.id;
  await sleep(100);
  const ok = await d.request({ type: 'cancel', of: relId }, 1000);
  const rel = await relP;
  assert.equal(ok.delivered, true);
  assert.equal(rel.type, 'cancelled', JSON.stringify(rel));
  assert.equal(rel.t0, rel.t1, 'never started');
  assert.ok(d.lines.indexOf(ok) < d.lines.indexOf(rel));
  assert.equal(answers(d, acqId).length, 0, 'the acquire still waits');
  const ok2 = await d.request({ type: 'cancel', of: acqId }, 1000);
  assert.equal(ok2.delivered, true);
  assert.equal((await acqP).type, 'cancelled');
  // The release never ran: the key is still held (using() renews it), and
  // the lease is gone on the driver's side.
  assert.equal(await shared.admin.get(mine), lease.token);
  const again = await d.request({ type: 'release', lease: lease.lease });
  assert.equal(again.type, 'error', JSON.stringify(again));
  assert.match(again.error, /unknown lease/);
  await holder.request({ type: 'release', lease: held.lease });
  await d.request({ type: 'shutdown' });
  await holder.request({ type: 'shutdown' });
  await shared.admin.del(mine);
});

test('a cancel of an unknown or answered request is not delivered and does nothing', async () => {
  await Promise.all([...LOCKS, 'example'].map(async (lock) => {
    const d = await ready(lock, [shared]);
    const unknown = await d.request({ type: 'cancel', of: 9999 }, 1000);
    assert.equal(unknown.type, 'cancel_ok', `${lock}: ${JSON.stringify(unknown)}`);
    assert.equal(unknown.delivered, false, `${lock}: ${JSON.stringify(unknown)}`);
    const key = newKey();
    const rP = d.request({ type: 'acquire', key, ttl_ms: 2000, wait_ms: 0 });
    const acqId = d.id;
    const r = await rP;
    assert.equal(r.type, 'acquired');
    const late = await d.request({ type: 'cancel', of: acqId }, 1000);
    assert.equal(late.delivered, false, `${lock}: ${JSON.stringify(late)}`);
    // The lease stands: its release works.
    assert.equal((await d.request({ type: 'release', lease: r.lease })).type, 'released');
    assert.equal(answers(d, acqId).length, 1);
    await d.request({ type: 'shutdown' });
  }));
});

// --- API modes, and the throw and sigterm extensions (docs/driver-protocol.md) ---

// Every lock's modes, the default first, as its lock file lists them; and
// the redlock locks' api=acquire, a lock of another kind (no extension).
const MODES = {
  'node-redlock': ['using', 'acquire-extend'],
  'sesamecare-redlock': ['using', 'acquire-extend'],
  'redis-semaphore-mutex': ['acquire', 'try-acquire'],
  'redis-semaphore-redlock': ['acquire', 'try-acquire'],
};
const CASES = [
  ...Object.entries(MODES).flatMap(([lock, apis]) => apis.map((api) => [lock, api])),
  ['node-redlock', 'acquire'], ['sesamecare-redlock', 'acquire'],
];
const yamlList = (lock, field) => {
  const m = fs.readFileSync(path.join(__dirname, `${lock}.yaml`), 'utf8').match(new RegExp(`^${field}:\\s*\\[([^\\]]*)\\]`, 'm'));
  return m ? m[1].split(',').map((x) => x.trim()).filter(Boolean) : null;
};
const redisKey = (r, key) => r.redis_key || key;

test('hello lists the API modes of the lock\'s kind, the default first, as the lock files do', async () => {
  await Promise.all(LOCKS.map(async (lock) => {
    const h = await driver(lock).hello();
    assert.deepEqual(h.apis, MODES[lock], `${lock}: apis`);
    assert.deepEqual(yamlList(lock, 'apis'), h.apis, `${lock}.yaml apis`);
    assert.ok(h.options.includes('api'), `${lock}: options ${h.options}`);
    // Every mode offered keeps the lock file's capabilities.
    for (const api of h.apis) {
      const hm = await driver(lock, ['--opt', `api=${api}`]).hello();
      assert.deepEqual(hm.capabilities, h.capabilities, `${lock} api=${api}`);
      assert.deepEqual(hm.apis, h.apis, `${lock} api=${api}: the same list, the default first`);
    }
  }));
  // redlock's acquire does not extend: another kind of lock, offered alone;
  // auto_extend=false (the older option) is the same; the two disagreeing
  // stop the driver at start, naming both.
  for (const lock of ['node-redlock', 'sesamecare-redlock']) {
    for (const opt of ['api=acquire', 'auto_extend=false']) {
      const h = await driver(lock, ['--opt', opt]).hello();
      assert.deepEqual(h.capabilities, ['multi-node'], `${lock} ${opt}`);
      assert.deepEqual(h.reports, ['deadline'], `${lock} ${opt}`);
      assert.deepEqual(h.apis, ['acquire'], `${lock} ${opt}`);
      assert.equal(h.name, `${lock}-acquire`, `${lock} ${opt}: a name of its own (exec: registers it beside the lock file's)`);
    }
  }
  const bad = driver('node-redlock', ['--opt', 'api=using', '--opt', 'auto_extend=false']);
  assert.equal(await bad.exited, 2);
  assert.match(bad.stderr, /api=using and auto_extend=false disagree/);
});

test('an unknown api in init is an error naming it and the modes', async () => {
  await Promise.all([...LOCKS, 'example'].map(async (lock) => {
    const d = driver(lock);
    await d.hello();
    const r = await d.init([shared], { extra: { api: 'no-such-idiom' } });
    assert.equal(r.type, 'error', `${lock}: ${JSON.stringify(r)}`);
    assert.match(r.error, /api=no-such-idiom/, lock);
    const modes = lock === 'example' ? ['with-lock', 'try-unlock'] : MODES[lock];
    for (const m of modes) assert.ok(r.error.includes(m), `${lock}: ${r.error} names ${m}`);
  }));
});

test('each API mode acquires, is refused, waits, releases and hands over', async () => {
  const byLock = new Map();
  for (const [lock, api] of [...CASES, ['example', 'with-lock'], ['example', 'try-unlock']]) byLock.set(lock, [...(byLock.get(lock) || []), api]);
  await Promise.all([...byLock].map(async ([lock, apis]) => {
    for (const api of apis) {
      const what = `${lock} api=${api}`;
      const a = await ready(lock, [shared], { client: 1, extra: { api } });
      const b = await ready(lock, [shared], { client: 2, extra: { api } });
      const key = newKey();
      const ra = await a.request({ type: 'acquire', key, ttl_ms: 3000, wait_ms: 0 });
      assert.equal(ra.type, 'acquired', `${what}: ${JSON.stringify(ra)}`);
      assert.equal(await shared.admin.get(redisKey(ra, key)), ra.token, `${what}: the key holds the token`);
      const rb = await b.request({ type: 'acquire', key, ttl_ms: 3000, wait_ms: 0 });
      assert.equal(rb.type, 'not_acquired', `${what}: ${JSON.stringify(rb)}`);
      const wb = b.request({ type: 'acquire', key, ttl_ms: 3000, wait_ms: 2000 });
      await sleep(100);
      assert.equal((await a.request({ type: 'release', lease: ra.lease })).type, 'released', what);
      const rb2 = await wb;
      assert.equal(rb2.type, 'acquired', `${what}: the waiter gets it after the release: ${JSON.stringify(rb2)}`);
      assert.equal((await b.request({ type: 'release', lease: rb2.lease })).type, 'released', what);
      assert.equal(await shared.admin.exists(redisKey(rb2, key)), 0, `${what}: released`);
      await a.request({ type: 'shutdown' });
      await b.request({ type: 'shutdown' });
    }
  }));
});

test('acquire-extend extends on the application\'s timer and pushes each renewal', async () => {
  await Promise.all(['node-redlock', 'sesamecare-redlock'].map(async (lock) => {
    const d = await ready(lock, [shared], { extra: { api: 'acquire-extend' }, options: { renew_interval_ms: 100 } });
    const key = newKey();
    const r = await d.request({ type: 'acquire', key, ttl_ms: 300, wait_ms: 0 });
    assert.equal(r.type, 'acquired');
    await sleep(700);
    assert.equal(await shared.admin.get(key), r.token, `${lock}: the key outlived its 300 ms TTL`);
    const ren = d.events.filter((e) => e.type === 'renewal' && e.lease === r.lease);
    assert.ok(ren.length >= 4 && ren.every((e) => e.outcome === 'ok'), `${lock}: ${JSON.stringify(ren)}`);
    // Taken away: the next extend fails, the section is told (lost).
    await shared.admin.set(key, 'someone-else', 'PX', 5000);
    assert.ok(await until(() => d.events.some((e) => e.type === 'lost'), 4000), `${lock}: ${JSON.stringify(d.events.slice(-3))}`);
    assert.equal((await d.request({ type: 'release', lease: r.lease })).type, 'not_owner');
    await shared.admin.del(key);
  }));
});

test('redlock\'s own retries are raced against wait_ms; a late win is released at once', async () => {
  const holder = await ready('node-redlock', [shared], { client: 1 });
  const d = await ready('node-redlock', [shared], { client: 2 });
  const key = newKey();
  const held = await holder.request({ type: 'acquire', key, ttl_ms: 10000, wait_ms: 0 });
  // The library alone retries 10 times 200 ms ± 100 (2 s or more).
  const r = await d.request({ type: 'acquire', key, ttl_ms: 10000, wait_ms: 700 });
  const waited = (r.t1 - r.t0) / 1e6;
  // Refused by every attempt so far; or, when the deadline finds an attempt
  // on the wire (on a loaded machine a round trip can straddle it: a CI
  // rehearsal), unknown, as the protocol asks.
  assert.ok(r.type === 'not_acquired' || (r.type === 'indeterminate' && /on the wire/.test(r.error)), JSON.stringify(r));
  assert.ok(waited >= 690 && waited < 1100, `answered after ${waited} ms of wait_ms 700`);
  // The library goes on trying; the key freed now, it wins for nobody and
  // its critical section ends at once.
  assert.equal((await holder.request({ type: 'release', lease: held.lease })).type, 'released');
  assert.ok(await until(() => /won after its caller stopped waiting/.test(d.stderr), 2500), `stderr: ${d.stderr}`);
  let freed = false;
  for (const t = Date.now(); !freed && Date.now() - t < 500; await sleep(20)) freed = (await shared.admin.exists(key)) === 0;
  assert.ok(freed, 'released at once, well before its 10 s TTL');
  const again = await d.request({ type: 'acquire', key, ttl_ms: 1000, wait_ms: 0 });
  assert.equal(again.type, 'acquired', JSON.stringify(again));
  assert.deepEqual(d.events, [], 'nothing pushed for the late win');
  await d.request({ type: 'release', lease: again.lease });
});

test('throw: the error is raised in the critical section, the idiom releases, raised says it came out', async () => {
  await Promise.all([...CASES, ['example', 'with-lock'], ['example', 'try-unlock']].map(async ([lock, api]) => {
    const what = `${lock} api=${api}`;
    const d = await ready(lock, [shared], { extra: { api } });
    const key = newKey();
    const r = await d.request({ type: 'acquire', key, ttl_ms: 5000, wait_ms: 0 });
    assert.equal(r.type, 'acquired', what);
    const rel = await d.request({ type: 'release', lease: r.lease, throw: 'lockchaos: an error in the critical section' });
    assert.equal(rel.type, 'released', `${what}: ${JSON.stringify(rel)}`);
    assert.equal(rel.raised, true, `${what}: using() and finally pass the error on`);
    assert.equal(await shared.admin.exists(redisKey(r, key)), 0, `${what}: the idiom released the key`);
    // The lease is over; the next hold is as usual.
    assert.match((await d.request({ type: 'release', lease: r.lease })).error, /lease/);
    const next = await d.request({ type: 'acquire', key, ttl_ms: 5000, wait_ms: 0 });
    assert.equal(next.type, 'acquired', what);
    assert.equal((await d.request({ type: 'release', lease: next.lease })).raised, undefined, `${what}: a plain release has no raised`);
    await d.request({ type: 'shutdown' });
  }));
  // A lease lost before the throw: the idiom's release is refused, the
  // error still comes out.
  const d = await ready('redis-semaphore-mutex', [shared], {}, ['--opt', 'renew_interval_ms=0']);
  const key = newKey();
  const r = await d.request({ type: 'acquire', key, ttl_ms: 150, wait_ms: 0 });
  await sleep(300);
  await shared.admin.set(r.redis_key, 'someone-else', 'PX', 5000);
  const rel = await d.request({ type: 'release', lease: r.lease, throw: 'boom' });
  assert.equal(rel.type, 'not_owner', JSON.stringify(rel));
  assert.equal(rel.raised, true);
  assert.equal(await shared.admin.get(r.redis_key), 'someone-else');
});

test('sigterm: the driver ends its critical sections, releases, and exits 0 within its deadline', async () => {
  const cases = [...LOCKS.map((l) => [l, MODES[l][0]]), ['node-redlock', 'acquire-extend'], ['redis-semaphore-mutex', 'try-acquire'], ['node-redlock', 'acquire'], ['example', 'with-lock'], ['example', 'try-unlock']];
  await Promise.all(cases.map(async ([lock, api]) => {
    const what = `${lock} api=${api}`;
    // init's TTL (the shutdown's deadline) 1 s; the lease's 20 s, so that
    // only a release frees the key.
    const d = await ready(lock, [shared], { extra: { api }, options: { ttl_ms: 1000 } });
    const key = newKey();
    const r = await d.request({ type: 'acquire', key, ttl_ms: 20000, wait_ms: 0 });
    assert.equal(r.type, 'acquired', what);
    const t = Date.now();
    process.kill(d.proc.pid, 'SIGTERM');
    assert.equal(await d.exited, 0, `${what}: exit 0 (stderr ${d.stderr})`);
    const took = Date.now() - t;
    assert.ok(took < 1000 + 1500, `${what}: exited ${took} ms after SIGTERM (deadline 1 s)`);
    assert.equal(await shared.admin.exists(redisKey(r, key)), 0, `${what}: the key was released on the way out`);
  }));
});

test('sigterm while an acquire waits: the process exits within the deadline, the holder keeps the key', async () => {
  await Promise.all(['node-redlock', 'redis-semaphore-mutex', 'example'].map(async (lock) => {
    const holder = await ready(lock, [shared], { client: 1 });
    const d = await ready(lock, [shared], { client: 2, options: { ttl_ms: 500 } });
    const key = newKey();
    const held = await holder.request({ type: 'acquire', key, ttl_ms: 20000, wait_ms: 0 });
    const waiting = d.request({ type: 'acquire', key, ttl_ms: 20000, wait_ms: 5000 }, 8000).catch(() => null);
    await sleep(150);
    const t = Date.now();
    process.kill(d.proc.pid, 'SIGTERM');
    assert.equal(await d.exited, 0, `${lock}: ${d.stderr}`);
    assert.ok(Date.now() - t < 500 + 1500, `${lock}: exited ${Date.now() - t} ms after SIGTERM (deadline 500 ms)`);
    void waiting;
    assert.equal(await shared.admin.get(redisKey(held, key)), held.token, `${lock}: the holder's key stands`);
    assert.equal((await holder.request({ type: 'release', lease: held.lease })).type, 'released');
    await holder.request({ type: 'shutdown' });
  }));
});

test('the redlock settings: the library\'s defaults but for what lockchaos sets', () => {
  const { settingsOf, thresholdOf, LIBRARY } = require('./lib/redlock');
  const init = { options: { ttl_ms: 500, retry_delay_ms: 10, renew_interval_ms: 166 } };
  assert.deepEqual(settingsOf({}, init), {}, 'nothing of its own: the library fills in its defaults');
  assert.deepEqual(LIBRARY, { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 100, automaticExtensionThreshold: 500 });
  assert.deepEqual(settingsOf({ retry_count: '3', retry_delay_ms: '20', retry_jitter_ms: '5', drift_factor: '0.02' }, init), { retryCount: 3, retryDelay: 20, retryJitter: 5, driftFactor: 0.02 });
  assert.deepEqual(settingsOf({ retry: 'driver' }, init), { retryCount: 0, retryDelay: 10, retryJitter: 5, driftFactor: 0.01 }, 'retry=driver: as before the modes');
  assert.equal(thresholdOf(2000, 0), 500, 'the library\'s threshold');
  assert.equal(thresholdOf(500, 0), 400, 'at most ttl - 100 (using() refuses more)');
  assert.equal(thresholdOf(2000, 300), 1700, 'renew_interval_ms: extend that long into the lease');
});
