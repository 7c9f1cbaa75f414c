#!/usr/bin/env bash
# Installs the Node drivers' lock libraries, pinned by their lockfiles:
#   scripts/drivers-node.sh                       npm ci in drivers/node and examples/node-driver
#   scripts/drivers-node.sh --version PKG@VER     another version of a lock library (e.g.
#       redlock@5.0.0-beta.1, @sesamecare-oss/redlock@1.3.0, redis-semaphore@5.6.2) into the
#       per-version cache the driver loads it from when a run asks for --lock-opt version=VER:
#       ${LOCKCHAOS_NODE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/lockchaos/node}/<pkg, / as +>@VER
# Needs Node 20+ and npm; reaches only the npm registry.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

command -v node >/dev/null 2>&1 || { echo "drivers-node: node not found (Node 20+ is needed)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "drivers-node: npm not found" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "drivers-node: node $(node --version): Node 20+ is needed" >&2
  exit 1
fi
npmq=(--no-audit --no-fund --loglevel=error)

if [ $# -eq 0 ]; then
  for d in drivers/node examples/node-driver; do
    (cd "$root/$d" && timeout 600 npm ci "${npmq[@]}")
    echo "drivers-node: $d installed from its package-lock.json"
  done
  exit 0
fi

if [ "$1" != "--version" ] || [ $# -ne 2 ]; then
  echo "usage: $0 [--version PKG@VERSION]" >&2
  exit 2
fi
spec=$2
pkg=${spec%@*}
ver=${spec##*@}
if [ -z "$pkg" ] || [ -z "$ver" ] || [ "$pkg" = "$spec" ] || [[ "$pkg" != *[!@]* ]]; then
  echo "drivers-node: $spec: want PKG@VERSION" >&2
  exit 2
fi
case "$pkg" in
  redlock | @sesamecare-oss/redlock | redis-semaphore) ;;
  *) echo "drivers-node: $pkg is not a lock library of the Node drivers" >&2; exit 2 ;;
esac
cache=${LOCKCHAOS_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockchaos/node}
dir="$cache/${pkg//\//+}@$ver"
if [ -f "$dir/node_modules/$pkg/package.json" ]; then
  echo "drivers-node: $pkg@$ver already in $dir"
  exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo '{"private":true}' > "$tmp/package.json"
# The exact version; the driver hands the library its own ioredis clients.
(cd "$tmp" && timeout 600 npm install --no-save --save-exact "${npmq[@]}" "$pkg@$ver")
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "drivers-node: $pkg@$ver installed in $dir"
