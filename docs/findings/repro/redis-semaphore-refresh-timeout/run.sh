#!/usr/bin/env bash
# Standalone reproducer for docs/findings/redis-semaphore-refresh-timeout.md: redis-semaphore's
# Mutex never reports a refresh that times out. Needs Node 20+, npm and redis-server (PATH, or
# REDIS_SERVER=/path/to/redis-server); reaches only the npm registry, and only to install.
#   bash run.sh                      the version pinned by package-lock.json (redis-semaphore 5.8.0)
#   REPRO_VERSION=X bash run.sh      redis-semaphore X instead, installed (with the pinned ioredis)
#                                    into ${XDG_CACHE_HOME:-~/.cache}/lockchaos/repro/; the
#                                    committed lock file is not touched
#   REPRO_VERSION=X REPRO_IOREDIS=Y  ... with ioredis Y (4.x wants ioredis 4, e.g. 4.31.0)
# Exits with node --test's exit code: 1 when the test fails, i.e. the bug is reproduced (its
# message starts with the marker CI greps for), 0 when the holder is told in time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
test_file="$here/redis-semaphore-refresh-timeout.test.js"
npmq=(--no-audit --no-fund --loglevel=error)

command -v node >/dev/null 2>&1 || { echo "run.sh: node not found (Node 20+ is needed)" >&2; exit 2; }
command -v npm >/dev/null 2>&1 || { echo "run.sh: npm not found" >&2; exit 2; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "run.sh: node $(node --version): Node 20+ is needed" >&2
  exit 2
fi

if [ -n "${REPRO_VERSION:-}" ]; then
  case "$REPRO_VERSION" in
    *[!0-9A-Za-z.+-]*) echo "run.sh: REPRO_VERSION=$REPRO_VERSION: want a version such as 5.6.2" >&2; exit 2 ;;
  esac
  # The same ioredis as the committed package.json pins, next to the library, so the library
  # resolves it (and the test takes its clients from it: before 5.6.0 the Mutex checks
  # `client instanceof` its own ioredis's class).
  ioredis=${REPRO_IOREDIS:-$(node -p "require('$here/package.json').dependencies.ioredis")}
  case "$ioredis" in
    *[!0-9A-Za-z.+-]*) echo "run.sh: REPRO_IOREDIS=$ioredis: want a version such as 4.31.0" >&2; exit 2 ;;
  esac
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/lockchaos/repro/redis-semaphore-refresh-timeout
  dir="$cache/redis-semaphore@$REPRO_VERSION+ioredis@$ioredis"
  if [ ! -f "$dir/node_modules/redis-semaphore/package.json" ]; then
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/.install.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    echo '{"private":true}' > "$tmp/package.json"
    echo "run.sh: installing redis-semaphore@$REPRO_VERSION and ioredis@$ioredis into $dir" >&2
    (cd "$tmp" && timeout 600 npm install --no-save --save-exact "${npmq[@]}" \
      "redis-semaphore@$REPRO_VERSION" "ioredis@$ioredis") >&2
    rm -rf "$dir"
    mv "$tmp" "$dir"
    trap - EXIT
  fi
  export REPRO_MODULES="$dir"
else
  if [ ! -d "$here/node_modules" ]; then
    echo "run.sh: npm ci in $here" >&2
    (cd "$here" && timeout 600 npm ci "${npmq[@]}") >&2
  fi
  export REPRO_MODULES="$here"
fi

cd "$here"
set +e
node --test --test-timeout=60000 "$test_file"
rc=$?
set -e
exit "$rc"
