'use strict';
// Test helpers: real redis-server processes on free loopback ports, and a
// driver process spoken to in the protocol. Everything started here is
// stopped by its pid.
const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');
const Redis = require('ioredis');

const DRIVER = path.resolve(__dirname, '..', 'driver.js');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// startRedis starts a redis-server on a free port and waits until it answers.
async function startRedis() {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const addr = `127.0.0.1:${port}`;
  let admin;
  for (let i = 0; ; i++) {
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.ping();
      admin = c;
      break;
    } catch (e) {
      c.disconnect();
      if (i > 100) { proc.kill('SIGKILL'); throw new Error(`redis-server on ${addr} did not answer: ${e.message}`); }
      await sleep(50);
    }
  }
  return {
    port, addr, proc, admin,
    stop() { admin.disconnect(); try { process.kill(proc.pid, 'SIGCONT'); process.kill(proc.pid, 'SIGKILL'); } catch { /* gone */ } },
  };
}

// Driver is one driver process. request() sends a request and resolves with
// its reply; events holds the pushed lines; lines every line in order.
class Driver {
  constructor(args, env = {}, script = DRIVER) {
    this.proc = spawn(process.execPath, [script, ...args], {
      cwd: path.dirname(script), env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.id = 0;
    this.waiting = new Map();
    this.events = [];
    this.lines = [];
    this.stderr = '';
    this.proc.stderr.on('data', (d) => { this.stderr += d; });
    readline.createInterface({ input: this.proc.stdout }).on('line', (text) => {
      const msg = JSON.parse(text);
      msg.at = Date.now();
      this.lines.push(msg);
      if (msg.in_reply_to === undefined) {
        this.events.push(msg);
        return;
      }
      const w = this.waiting.get(msg.in_reply_to);
      if (w) { this.waiting.delete(msg.in_reply_to); w(msg); }
    });
    this.exited = new Promise((r) => this.proc.on('exit', (code) => r(code)));
  }

  request(msg, timeoutMs = 10000) {
    const id = ++this.id;
    const p = new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no reply to ${msg.type} (id ${id}) in ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs);
      this.waiting.set(id, (m) => { clearTimeout(t); resolve(m); });
    });
    this.proc.stdin.write(JSON.stringify({ id, ...msg }) + '\n');
    return p;
  }

  async hello() { return this.request({ type: 'hello', protocol: 1 }); }

  async init(servers, { client = 1, topology, options = {}, extra = {}, prefix = 'lc:t:' } = {}) {
    this.connName = `lockchaos-t-c${client}-${this.proc.pid}`;
    return this.request({
      type: 'init', client, conn_name: this.connName, key_prefix: prefix,
      topology: topology || (servers.length > 1 ? 'independent' : 'single'),
      endpoints: servers.map((s) => ({ addr: s.addr })),
      options: { ttl_ms: 500, acquire_timeout_ms: 1000, command_timeout_ms: 250, retry_delay_ms: 10, renew_interval_ms: 100, ...options, extra },
    });
  }

  kill() { try { process.kill(this.proc.pid, 'SIGKILL'); } catch { /* gone */ } }
}

module.exports = { startRedis, Driver, sleep, freePort };
