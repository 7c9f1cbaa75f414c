'use strict';
// The protocol's plumbing shared by every Node driver: clocks, output lines
// and lock options (docs/driver-protocol.md).

// Monotonic nanoseconds since this process started: process.hrtime.bigint()
// minus its value at start, so the number stays below 2^53 (104 days) and is
// exact as a JSON number in any decoder.
const ORIGIN = process.hrtime.bigint();
function mono() {
  return Number(process.hrtime.bigint() - ORIGIN);
}

// Milliseconds until a wall-clock (Date.now) expiry, mapped onto mono():
// the deadline a library computed on its wall clock, as the protocol wants it.
function wallToMono(expiryMs) {
  return mono() + (expiryMs - Date.now()) * 1e6;
}

// line writes one protocol line. BigInt values are written as exact JSON
// integers (wall_ns does not fit a double). stdout to a pipe is synchronous
// on Linux, so lines leave in the order they are written.
const BIG = '@lockchaos-bigint:';
const BIGRE = /"@lockchaos-bigint:(-?\d+)"/g;
function line(obj) {
  const s = JSON.stringify(obj, (k, v) => (typeof v === 'bigint' ? `${BIG}${v}` : v));
  process.stdout.write(s.replace(BIGRE, '$1') + '\n');
}

function log(...args) {
  process.stderr.write(`[node-driver ${process.pid}] ${args.join(' ')}\n`);
}

// parseOpts reads "k=v,k=v" (LOCKCHAOS_LOCK_OPTS, --opt k=v) into an object.
function parseOpts(s, into = {}) {
  for (const kv of (s || '').split(',')) {
    const i = kv.indexOf('=');
    if (i > 0) into[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
  }
  return into;
}

function boolOpt(v, dflt) {
  if (v === undefined || v === null || v === '') return dflt;
  if (typeof v === 'boolean') return v;
  const s = String(v).toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(s)) return true;
  if (['0', 'false', 'no', 'off'].includes(s)) return false;
  throw new Error(`option value ${JSON.stringify(v)} is not a boolean`);
}

function intOpt(v, dflt) {
  if (v === undefined || v === null || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new Error(`option value ${JSON.stringify(v)} is not an integer`);
  return n;
}

// leaseOf finds a lease by the id the driver gave it.
function leaseOf(leases, id) {
  const l = leases.get(id);
  if (!l) throw new Error(`unknown lease ${JSON.stringify(id)}`);
  return l;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

module.exports = { mono, wallToMono, line, log, parseOpts, boolOpt, intOpt, sleep, leaseOf };
