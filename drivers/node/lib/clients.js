'use strict';
// Connections: ioredis clients to exactly the endpoints init names (this
// client's proxies), every connection named conn_name (ioredis
// connectionName, sent as CLIENT SETNAME on each connect and reconnect).
const { AsyncLocalStorage } = require('node:async_hooks');
const { ioredisFor } = require('./load');
const { log } = require('./proto');

function hostPort(addr) {
  const i = addr.lastIndexOf(':');
  if (i < 0) throw new Error(`endpoint address ${JSON.stringify(addr)} has no port`);
  return { host: addr.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(addr.slice(i + 1)) };
}

// connect makes one ioredis client per endpoint (independent masters: one
// each; single, sentinel, cluster: the one endpoint) and waits until each
// is ready, at most connectMs. extra: more ioredis options (keyPrefix).
// libDir: the lock library's directory, whose own ioredis (if its version
// installed one) makes the clients (load.js ioredisFor).
async function connect(init, extra = {}, connectMs = 5000, libDir = '') {
  const Redis = ioredisFor(libDir);
  const o = init.options || {};
  const common = {
    connectionName: init.conn_name,
    lazyConnect: true,
    // A command that does not answer in command_timeout_ms fails with
    // "Command timed out": an indeterminate outcome, not a refusal.
    commandTimeout: o.command_timeout_ms > 0 ? o.command_timeout_ms : undefined,
    connectTimeout: Math.max(1000, o.command_timeout_ms || 0),
    retryStrategy: (times) => Math.min(times * 20, 200),
    ...extra,
  };
  const eps = init.endpoints || [];
  if (eps.length === 0) throw new Error('init: no endpoints');
  const topo = init.topology || 'single';
  const clients = [];
  const mk = (ep) => {
    const pw = ep.password ? { password: ep.password } : {};
    // Sentinel and the cluster's slot map name the servers' own addresses;
    // an endpoint's addr_map (a driver extension: server address -> this
    // client's proxy) sends those through the proxies too (ioredis natMap).
    const nat = ep.addr_map ? { natMap: Object.fromEntries(Object.entries(ep.addr_map).map(([k, v]) => [k, hostPort(v)])) } : {};
    if (topo === 'sentinel') {
      return new Redis({ ...common, ...pw, ...nat, name: ep.master_name, sentinels: (ep.sentinels || []).map(hostPort) });
    }
    if (topo === 'cluster') {
      return new Redis.Cluster((ep.cluster && ep.cluster.length ? ep.cluster : [ep.addr]).map(hostPort), {
        ...nat,
        lazyConnect: true,
        keyPrefix: extra.keyPrefix,
        redisOptions: { ...common, ...pw, lazyConnect: undefined, keyPrefix: undefined },
      });
    }
    return new Redis({ ...common, ...pw, ...hostPort(ep.addr) });
  };
  for (const ep of topo === 'independent' ? eps : eps.slice(0, 1)) {
    const c = mk(ep);
    let last = '';
    c.on('error', (e) => {
      if (e.message !== last) log(`redis ${ep.addr || ''}: ${e.message}`);
      last = e.message;
    });
    clients.push(c);
  }
  let timer;
  try {
    await Promise.race([
      connectAll(clients, connectMs),
      new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`init: not connected within ${connectMs}ms`)), connectMs); }),
    ]);
  } catch (e) {
    clients.forEach((c) => c.disconnect());
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return clients;
}

// connectAll connects every client, each tried again (200 ms apart, within
// connectMs) when its connect failed: a connection's first commands
// (CLIENT SETNAME, under commandTimeout) can time out on a loaded machine,
// and ioredis then closes it ("Connection is closed.", a CI-like run of
// the drivers matrix beside other work).
async function connectAll(clients, connectMs) {
  const end = Date.now() + connectMs;
  await Promise.all(clients.map(async (c) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await c.connect();
        return;
      } catch (e) {
        if (attempt >= 4 || Date.now() + 200 >= end) throw e;
        log(`init: connecting again after: ${e.message}`);
        c.disconnect();
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }));
}

async function close(clients) {
  await Promise.race([
    Promise.allSettled(clients.map((c) => c.quit())),
    new Promise((r) => setTimeout(r, 300)),
  ]);
  clients.forEach((c) => c.disconnect());
}

// The tap: for a library that swallows its command errors (redis-semaphore's
// RedlockMutex counts a failed SET as a no), the driver records what each
// command of one library call answered, to tell a refusal from an unknown
// outcome. A call runs inside tapped.run(journal, fn); each tapped command
// issued in that call appends {name, client, value | error, done} to the
// journal (done: the command has answered or failed).
const tapped = new AsyncLocalStorage();

function tap(clients, names) {
  clients.forEach((client, idx) => {
    for (const name of names) {
      const orig = client[name];
      client[name] = function tappedCommand(...args) {
        const p = orig.apply(this, args);
        const j = tapped.getStore();
        if (j && !j.closed && p && typeof p.then === 'function') {
          const rec = { name, client: idx };
          j.calls.push(rec);
          p.then((v) => { rec.value = v; rec.done = true; }, (e) => { rec.error = e; rec.done = true; });
        }
        return p;
      };
    }
  });
}

// journalRun runs fn with a fresh journal and returns [journal, what fn
// returned] (a promise, or a scope whose calls the journal then records).
function journalRun(fn) {
  const j = { calls: [], closed: false };
  return [j, tapped.run(j, fn)];
}

// definiteNo: the server answered an error reply (the command did not run),
// as opposed to a timeout or a broken connection.
function definiteNo(err) {
  return !!err && err.name === 'ReplyError' && !/^NOSCRIPT/.test(err.message);
}

module.exports = { connect, close, tap, journalRun, definiteNo, hostPort };
