'use strict';
// Loading a lock library: the pinned version from drivers/node/node_modules,
// or another version from the per-version cache that scripts/drivers-node.sh
// fills (`scripts/drivers-node.sh --version <pkg>@<version>`).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createRequire } = require('node:module');

const HERE = path.resolve(__dirname, '..');

function cacheRoot() {
  return process.env.LOCKCHAOS_NODE_CACHE ||
    path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'lockchaos', 'node');
}

// The directory a version of pkg is installed in by the script.
function versionDir(pkg, version) {
  return path.join(cacheRoot(), `${pkg.replace('/', '+')}@${version}`);
}

function pinned(pkg) {
  const pj = JSON.parse(fs.readFileSync(path.join(HERE, 'package.json'), 'utf8'));
  return pj.dependencies[pkg];
}

// load returns {mod, version, dir} for pkg at version (the pinned one when
// version is empty). The version is the installed package.json's, without
// a leading "v" (redlock 5.0.0-beta.2 writes "v5.0.0-beta.2").
function load(pkg, version) {
  let base = HERE;
  if (version && version !== pinned(pkg)) base = versionDir(pkg, version);
  // Not require.resolve('<pkg>/package.json'): redlock's "exports" hide it.
  const pjPath = path.join(base, 'node_modules', pkg, 'package.json');
  if (!fs.existsSync(pjPath)) {
    throw new Error(base === HERE
      ? `${pkg} is not installed: run scripts/drivers-node.sh`
      : `${pkg}@${version} is not installed: run scripts/drivers-node.sh --version ${pkg}@${version} (cache ${cacheRoot()})`);
  }
  const req = createRequire(path.join(base, 'package.json'));
  const pj = JSON.parse(fs.readFileSync(pjPath, 'utf8'));
  return { mod: req(pkg), version: String(pj.version).replace(/^v/, ''), dir: path.dirname(pjPath) };
}

// ioredisFor is the ioredis a lock library at libDir resolves itself: the
// copy its version installed beside it (redis-semaphore 5.1.0-5.5.1 bring
// their own and check their clients with instanceof against it), else the
// driver's pinned one.
function ioredisFor(libDir) {
  if (libDir) {
    try {
      return createRequire(path.join(libDir, 'package.json'))('ioredis');
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND') throw e;
    }
  }
  return load('ioredis').mod;
}

module.exports = { load, pinned, versionDir, cacheRoot, ioredisFor };
