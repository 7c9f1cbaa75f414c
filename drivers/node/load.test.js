'use strict';
// Which ioredis a lock library's clients are made with:  node --test drivers/node
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ioredisFor, load } = require('./lib/load');

// A cached version that installed its own ioredis beside it (redis-semaphore
// 5.1.0-5.5.1 do, and check their clients with instanceof against it) gets
// clients of that copy; a library without one, the driver's pinned ioredis.
test('a lock library gets clients of the ioredis it resolves itself', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lc-ioredis-'));
  const bareRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'lc-bare-'));
  try {
    const lib = path.join(root, 'node_modules', 'some-lock');
    const own = path.join(root, 'node_modules', 'ioredis');
    for (const d of [lib, own]) fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(lib, 'package.json'), '{"name":"some-lock","version":"1.0.0"}');
    fs.writeFileSync(path.join(own, 'package.json'), '{"name":"ioredis","version":"0.0.1","main":"index.js"}');
    fs.writeFileSync(path.join(own, 'index.js'), 'module.exports = { ownCopy: true };');
    assert.deepEqual(ioredisFor(lib), { ownCopy: true });

    // Another tree with no ioredis in it: the pinned one.
    const bare = path.join(bareRoot, 'node_modules', 'other-lock');
    fs.mkdirSync(bare, { recursive: true });
    fs.writeFileSync(path.join(bare, 'package.json'), '{"name":"other-lock","version":"1.0.0"}');
    const pinned = load('ioredis').mod;
    assert.equal(ioredisFor(bare), pinned);
    assert.equal(ioredisFor(''), pinned);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(bareRoot, { recursive: true, force: true });
  }
});
