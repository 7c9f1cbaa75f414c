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
//
// Extension: {"type":"cancel","of":M} gives up request M (an acquire, a
// release or an extend) as a Node application does: it stops waiting for
// the library's promise (the promise loses a race with an AbortSignal's
// abort) and the library's call goes on unobserved. cancel_ok says
// delivered true while M is unanswered (then M answers "cancelled" at once,
// right after it), false otherwise. M's call, when it settles later, is
// dropped, as a careful application drops a result it gave up on: an
// acquire that won is released at once (its late result's cleanup,
// acquire().then(l => l.release())), never kept as a lease; a cancelled
// release's lease is forgotten. (Leaking it instead would blame the
// library for the application: node-redlock's and redis-semaphore's
// calls take no signal, and their auto-extension would renew the leak for
// the life of the process.) A request cancelled while it
// waits its turn is not started. The next request runs at once, not after
// the abandoned call.
//
// API modes: the lock option api picks the library's idiom (lib/redlock.js,
// lib/semaphore.js); hello lists the modes of the lock's kind in apis, the
// default first. Each hold is a scope (lib/scope.js): the idiom runs the
// critical section, parked until the release.
//
// Extension throw: a release with "throw": "<message>" raises an Error
// with that message in the critical section; the idiom's exception path
// releases (using() rejects, a finally runs), and the answer says raised:
// true when the error came out of the idiom to the application.
//
// Extension sigterm: on SIGTERM the driver shuts down as a Node service
// does (process.on('SIGTERM')): it ends every critical section, so each
// idiom releases on its way out (using() after its extension in flight,
// the explicit idioms in their finally), lets an acquire still under way
// release at once what it wins, waits for them at most the TTL, quits its
// clients and exits 0. Requests that come after it are refused.
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
let startOpts; // the options the process started with: a reset's next init starts from them
let startLib;
let lib; // {mod, version}
let lock = null;
let clients = [];
const inited = new Set(); // the lockchaos clients init answered (tasks: several share the lock)

// What hello says about the lock under these options and this version.
function identity() {
  const d = spec.describe(opts);
  return { name: d.variant ? `${spec.name}-${d.variant}` : spec.name, library: spec.pkg, version: lib.version, language: 'node', capabilities: d.capabilities, reports: d.reports, apis: d.apis };
}

async function init(req) {
  if (lock && inited.size > 0 && req.client !== undefined && !inited.has(req.client)) {
    // Another client of this process (the tasks extension): the library's
    // clients are connected and shared, as an application's handlers
    // share them.
    inited.add(req.client);
    return { type: 'init_ok' };
  }
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
  try {
    clients = await clientsMod.connect(req, ioOpts, undefined, lib.dir);
  } catch (e) {
    // Could not reach the servers: the machine's failure, which lockchaos
    // tells from a refused option (init's error with unavailable).
    if (req.endpoints && req.endpoints.length) e.unavailable = true;
    throw e;
  }
  try {
    lock = spec.create(lib.mod, clients, req, opts, line);
  } catch (e) {
    await clientsMod.close(clients);
    clients = [];
    throw new Error(`init: ${e.message}`);
  }
  defaultTtl = (req.options && req.options.ttl_ms) || 0;
  inited.add(req.client);
  const t1 = mono();
  const after = identity();
  const changed = {};
  for (const k of ['version', 'capabilities', 'reports', 'apis']) {
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

// reset (the reset extension, warm drivers): the run is over; its clients
// quit and the next init makes a new lock on new ones. Refused while the
// lock holds a lease (its extensions would outlive the run).
async function reset() {
  const held = lock && lock.leases ? lock.leases.size : 0;
  if (held > 0) throw new Error(`reset: ${held} leases held`);
  await clientsMod.close(clients);
  clients = [];
  lock = null;
  inited.clear();
  opts = { ...startOpts };
  lib = startLib;
  return { type: 'reset_ok' };
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

const EXTENSIONS = ['block_loop', 'cancel', 'throw', 'sigterm', 'reset', 'tasks'];
const HANDLERS = {
  hello: async () => ({ type: 'hello_ok', protocol: 1, ...identity(), options: spec.options, extensions: EXTENSIONS }),
  init,
  reset,
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
  // ping, clock, block_loop and cancel are answered here, at once, whatever
  // else is in flight: the event loop is free unless a block_loop holds it.
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
    case 'cancel':
      cancel(req);
      return;
    case 'shutdown':
      // After what is in flight, but not stuck behind it for more than 2 s.
      Promise.race([idle(), new Promise((r) => setTimeout(r, 2000))]).then(() => shutdown(req));
      return;
    default:
  }
  const h = HANDLERS[req.type];
  if (terminating && h) {
    line({ in_reply_to: id, type: 'error', error: 'shutting down (SIGTERM): not started' });
    return;
  }
  if (!h) {
    line({ in_reply_to: id, type: 'error', error: `unknown request type ${JSON.stringify(req.type)}` });
    return;
  }
  // The rest run one after another, in the order they came.
  enqueue(req, h);
}

// The request queues, one a client (lanes): a client's requests run one at
// a time (running), the others wait their turn (waiting), in order; the
// clients that share this process (the tasks extension: requests name
// their client) run side by side, as an application's handlers share one
// library client. Requests without a client (hello, init, reset) have a
// lane of their own. open holds the cancellable requests not answered yet
// (queued or running), by id; answer() writes a request's one answer and
// takes it out.
const CANCELLABLE = new Set(['acquire', 'release', 'extend']);
const CANCELLED = 'aborted: the caller stopped waiting';
const lanes = new Map();
const open = new Map();
let idleWaiters = [];

function laneOf(req) {
  const k = CANCELLABLE.has(req.type) && req.client !== undefined ? req.client : '-';
  let l = lanes.get(k);
  if (!l) {
    l = { running: null, waiting: [] };
    lanes.set(k, l);
  }
  return l;
}

function enqueue(req, h) {
  const e = { req, h, state: 'queued', answered: false, t0: 0, abort: null, lane: laneOf(req) };
  if (CANCELLABLE.has(req.type) && Number.isInteger(req.id)) open.set(req.id, e);
  e.lane.waiting.push(e);
  pump(e.lane);
}

// answer writes e's answer unless it has one already (false then).
function answer(e, rep) {
  if (e.answered) return false;
  e.answered = true;
  if (open.get(e.req.id) === e) open.delete(e.req.id);
  line({ in_reply_to: e.req.id, ...rep });
  return true;
}

// busy: a request runs or waits in some lane.
function busy() {
  for (const l of lanes.values()) if (l.running || l.waiting.length > 0) return true;
  return false;
}

// idle resolves when no request runs or waits (shutdown, stdin closed); an
// abandoned call (cancelled, still running in the library) does not count.
function idle() {
  if (!busy()) return Promise.resolve();
  return new Promise((r) => idleWaiters.push(r));
}

function pump(lane) {
  while (!lane.running && lane.waiting.length > 0) {
    const e = lane.waiting.shift();
    if (e.answered) continue; // cancelled while it waited: not started
    start(e);
  }
  if (!busy() && idleWaiters.length > 0) {
    const ws = idleWaiters;
    idleWaiters = [];
    ws.forEach((r) => r());
  }
}

// start runs e's call and races its promise against an AbortSignal's
// abort (a cancel), as an application that may give up the call does:
// whichever comes first answers; the loser is dropped.
function start(e) {
  e.lane.running = e;
  e.state = 'running';
  e.t0 = mono();
  const ac = new AbortController();
  e.abort = () => ac.abort();
  ac.signal.addEventListener('abort', () => {
    answer(e, { type: 'cancelled', error: CANCELLED, t0: e.t0, t1: mono() });
    done(e);
  }, { once: true });
  // Called now, not in a later microtask: a cancel read next (even from
  // the same chunk of stdin) finds the call under way, never one that is
  // "running" but would start after its cancel.
  let p;
  try {
    p = Promise.resolve(e.h(e.req));
  } catch (err) {
    p = Promise.reject(err);
  }
  p.then(
    (rep) => settled(e, rep),
    (err) => settled(e, { type: 'error', error: String(err && err.message || err), ...(err && err.unavailable && { unavailable: true }) }),
  );
}

// done frees e's lane for its next request when e held it.
function done(e) {
  if (e.lane.running === e) {
    e.lane.running = null;
    pump(e.lane);
  }
}

// settled: e's call ended. Its answer, unless the request was cancelled
// first; then the result is dropped as a careful application that gave up
// drops it: an acquire that won is released at once (its result reported
// to nobody, the release's outcome logged).
function settled(e, rep) {
  if (terminating && e.req.type === 'acquire' && !e.answered) {
    // Ended while the process shuts down: not answered (indeterminate to
    // lockchaos). A win is never reported (the caller would hold what the
    // shutdown releases): lock.shutdown() ended its critical section, or
    // its late entry ended at once, which released it.
    log(`request ${e.req.id} (acquire) ended during the SIGTERM shutdown: ${rep.type}${rep.lease ? ` ${rep.lease}` : ''}, not answered`);
    e.answered = true;
    done(e);
    return;
  }
  if (!answer(e, rep)) {
    log(`request ${e.req.id} (${e.req.type}), cancelled, ended: ${rep.type}${rep.lease ? ` ${rep.lease}` : ''}${rep.error ? `: ${rep.error}` : ''} (dropped)`);
    if (e.req.type === 'acquire' && rep.type === 'acquired' && lock) {
      Promise.resolve()
        .then(() => lock.release({ lease: rep.lease }))
        .then((r) => log(`request ${e.req.id}: its late lease ${rep.lease} released: ${r && r.type}`),
          (err) => log(`request ${e.req.id}: its late lease ${rep.lease} not released: ${err && err.message}`))
        .finally(() => lock.forget && lock.forget(rep.lease));
    }
  }
  done(e);
}

// cancel answers cancel_ok at once: delivered when request of is not
// answered yet, which then answers cancelled right after (in flight: the
// abort wins the race; waiting its turn: it is never started). A cancel of
// an answered or unknown request (or of one that is not an acquire, a
// release or an extend) does nothing.
function cancel(req) {
  const e = open.get(req.of);
  if (!e || e.answered) {
    line({ in_reply_to: req.id, type: 'cancel_ok', delivered: false });
    return;
  }
  line({ in_reply_to: req.id, type: 'cancel_ok', delivered: true });
  if (e.state === 'running') {
    e.abort();
    return;
  }
  // Not started: the application gave up before its call began. A
  // release's lease ends on the driver's side all the same.
  const t = mono();
  answer(e, { type: 'cancelled', error: `${CANCELLED} (before the call started)`, t0: t, t1: t });
  if (e.req.type === 'release' && lock && lock.forget) lock.forget(e.req.lease);
  pump(e.lane);
}

// SIGTERM: the service's graceful shutdown (see the top of the file).
let terminating = false;
async function onSigterm() {
  if (terminating) return;
  terminating = true;
  const deadline = Math.max(250, defaultTtl || 1000);
  const t0 = mono();
  log(`SIGTERM: ending the critical sections (at most ${deadline} ms), then quitting`);
  let finished = false;
  if (lock && lock.shutdown) {
    finished = await Promise.race([lock.shutdown().then(() => true), new Promise((r) => setTimeout(() => r(false), deadline))]);
  }
  log(`SIGTERM: ${finished ? 'every idiom returned' : 'the deadline came first'} after ${((mono() - t0) / 1e6).toFixed(1)} ms; quitting the clients`);
  await clientsMod.close(clients);
  process.exit(0);
}

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
    startOpts = { ...opts };
    startLib = lib;
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
  process.on('SIGTERM', onSigterm);
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  rl.on('line', onLine);
  rl.on('close', async () => {
    // stdin closed: finish what was asked (at most 5 s), then go.
    await Promise.race([idle(), new Promise((r) => setTimeout(r, 5000))]);
    await clientsMod.close(clients);
    process.exit(0);
  });
}

main();
