#!/usr/bin/env node
'use strict';
// lockchaos driver for Node lock libraries: the lock-client protocol
// (docs/driver-protocol.md) over stdin/stdout, one JSON object a line.
//
//   node driver.js --lock <name> [--opt k=v]...
//
// Locks: node-redlock, sesamecare-redlock, redis-semaphore-mutex,
// redis-semaphore-redlock. Options come from LOCKCHAOS_LOCK_OPTS ("k=v,k=v")
// and --opt at start (they decide what hello says: version, capabilities),
// then from init's options.extra; an init that changes what hello said
// repeats the changed fields (version, capabilities, reports) in init_ok.
//
// Extension: {"type":"block_loop","ms":N} busy-waits the event loop for N ms
// (the "Node's event loop blocked" fault: timers, renewals and replies all
// wait), then answers block_loop_ok with t0/t1.
const readline = require('node:readline');
const { mono, line, log, parseOpts, boolOpt } = require('./lib/proto');
const { load } = require('./lib/load');
const clientsMod = require('./lib/clients');
const { nodeRedlock, sesamecareRedlock } = require('./lib/redlock');
const { semaphoreMutex, semaphoreRedlock } = require('./lib/semaphore');

const LOCKS = Object.fromEntries([nodeRedlock, sesamecareRedlock, semaphoreMutex, semaphoreRedlock].map((s) => [s.name, s]));

function args(argv) {
  const a = { lock: process.env.LOCKCHAOS_LOCK || '', opts: parseOpts(process.env.LOCKCHAOS_LOCK_OPTS) };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--lock') a.lock = argv[++i];
    else if (argv[i] === '--opt') parseOpts(argv[++i], a.opts);
    else throw new Error(`unknown argument ${argv[i]} (usage: driver.js --lock <${Object.keys(LOCKS).join('|')}> [--opt k=v]...)`);
  }
  return a;
}

let spec;
let opts;
let lib; // {mod, version}
let lock = null;
let clients = [];

// What hello says about the lock under these options and this version.
function identity() {
  const d = spec.describe(opts);
  return { name: spec.name, library: spec.pkg, version: lib.version, language: 'node', capabilities: d.capabilities, reports: d.reports };
}

async function init(req) {
  if (lock) throw new Error('init: already initialised');
  const before = identity();
  const extra = (req.options && req.options.extra) || {};
  for (const k of Object.keys(extra)) {
    if (!spec.options.includes(k)) throw new Error(`init: option ${k} is not one of ${spec.options.join(', ')}`);
  }
  opts = { ...opts, ...extra };
  if (extra.version && extra.version !== lib.version) lib = load(spec.pkg, extra.version);
  const t0 = mono();
  // offline_queue (ioredis enableOfflineQueue): "false" fails a command at once while its
  // connection is down (a cut or reset link) instead of queueing it until commandTimeout.
  const ioOpts = { ...(spec.clientOptions ? spec.clientOptions(req) : {}) };
  if (opts.offline_queue !== undefined) ioOpts.enableOfflineQueue = boolOpt(opts.offline_queue, true);
  clients = await clientsMod.connect(req, ioOpts, undefined, lib.dir);
  lock = spec.create(lib.mod, clients, req, opts, line);
  defaultTtl = (req.options && req.options.ttl_ms) || 0;
  const t1 = mono();
  const after = identity();
  const changed = {};
  for (const k of ['version', 'capabilities', 'reports']) {
    if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) changed[k] = after[k];
  }
  return { type: 'init_ok', t0, t1, ...changed };
}

function blockLoop(ms) {
  const t0 = mono();
  const end = t0 + ms * 1e6;
  while (mono() < end) { /* the fault: nothing else runs */ }
  return { type: 'block_loop_ok', t0, t1: mono() };
}

async function shutdown(req) {
  line({ in_reply_to: req.id, type: 'shutdown_ok' });
  await clientsMod.close(clients);
  process.exit(0);
}

let defaultTtl = 0; // init's ttl_ms, for a request without one
const needLock = (f) => async (req) => {
  if (!lock) throw new Error(`${req.type} before init`);
  if (req.ttl_ms === undefined) req.ttl_ms = defaultTtl;
  if (!(Number.isInteger(req.ttl_ms) && req.ttl_ms > 0) && req.type !== 'release') throw new Error(`${req.type}: ttl_ms ${req.ttl_ms} is not a positive integer`);
  return f(req);
};

const HANDLERS = {
  hello: async () => ({ type: 'hello_ok', protocol: 1, ...identity(), options: spec.options, extensions: ['block_loop'] }),
  init,
  acquire: needLock((r) => lock.acquire(r)),
  release: needLock((r) => lock.release(r)),
  extend: needLock((r) => lock.extend(r)),
};

function onLine(text) {
  if (text.trim() === '') return;
  let req;
  try {
    req = JSON.parse(text);
  } catch (e) {
    log(`not JSON: ${text.slice(0, 200)}`);
    line({ type: 'error', error: `not JSON: ${e.message}` });
    return;
  }
  const id = req.id;
  // ping, clock and block_loop are answered here, at once, whatever else is
  // in flight: the event loop is free unless a block_loop holds it.
  switch (req.type) {
    case 'ping': {
      const t0 = mono();
      line({ in_reply_to: id, type: 'pong', t0, t1: mono() });
      return;
    }
    case 'clock':
      line({ in_reply_to: id, type: 'clock_ok', mono_ns: mono(), wall_ns: BigInt(Date.now()) * 1000000n, mono_raw_ns: process.hrtime.bigint() });
      return;
    case 'block_loop':
      line({ in_reply_to: id, ...blockLoop(Number(req.ms) || 0) });
      return;
    case 'shutdown':
      // After what is in flight, but not stuck behind it for more than 2 s.
      Promise.race([queue, new Promise((r) => setTimeout(r, 2000))]).then(() => shutdown(req));
      return;
    default:
  }
  const h = HANDLERS[req.type];
  if (!h) {
    line({ in_reply_to: id, type: 'error', error: `unknown request type ${JSON.stringify(req.type)}` });
    return;
  }
  // The rest run one after another, in the order they came.
  queue = queue.then(() => h(req)).then(
    (rep) => line({ in_reply_to: id, ...rep }),
    (e) => line({ in_reply_to: id, type: 'error', error: String(e && e.message || e) }),
  );
}
let queue = Promise.resolve();

function main() {
  let a;
  try {
    a = args(process.argv.slice(2));
    spec = LOCKS[a.lock];
    if (!spec) throw new Error(`--lock ${JSON.stringify(a.lock)}: not one of ${Object.keys(LOCKS).join(', ')}`);
    opts = a.opts;
    for (const k of Object.keys(opts)) {
      if (!spec.options.includes(k)) throw new Error(`option ${k} is not one of ${spec.options.join(', ')}`);
    }
    lib = load(spec.pkg, opts.version);
    identity(); // option values are checked here
  } catch (e) {
    log(e.message);
    process.exit(2);
  }
  // A library timer whose promise rejects (redis-semaphore's Mutex refresh
  // after a command timeout) ends plain Node 20 (exit 1); the driver logs it
  // and goes on, as a service with an unhandledRejection handler does.
  // LOCKCHAOS_NODE_UNHANDLED=exit keeps Node's own behaviour.
  if (process.env.LOCKCHAOS_NODE_UNHANDLED !== 'exit') {
    process.on('unhandledRejection', (e) => log(`unhandled rejection: ${e && e.stack || e}`));
  }
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  rl.on('line', onLine);
  rl.on('close', async () => {
    // stdin closed: finish what was asked (at most 5 s), then go.
    await Promise.race([queue, new Promise((r) => setTimeout(r, 5000))]);
    await clientsMod.close(clients);
    process.exit(0);
  });
}

main();
