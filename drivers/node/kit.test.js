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
