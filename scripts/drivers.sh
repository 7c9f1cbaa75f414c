#!/usr/bin/env bash
# Installs the shipped driver locks' libraries (docs/driver-protocol.md), each
# pinned by its own lockfile or checksums, so that a fresh machine and CI get
# the same versions:
#   Python  drivers/python/requirements.txt (exact versions, hashes)   scripts/drivers-python.sh
#   Node    drivers/node/package-lock.json (npm ci)                     scripts/drivers-node.sh
#   Java    drivers/java/pom.xml + deps.sha256 (Maven -C, checksums)    scripts/drivers-java.sh
# Needs python3, node/npm (20+), java (17+) and mvn on PATH; a language whose
# tools are missing is skipped with a line saying so, or fails where
# LOCKCHAOS_REQUIRE_DRIVERS=1 (CI). LOCKCHAOS_NO_DRIVERS=1 skips them all.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${LOCKCHAOS_NO_DRIVERS:-}" = "" ] || { echo "drivers: skipped (LOCKCHAOS_NO_DRIVERS)"; exit 0; }
missing() {
  if [ -n "${LOCKCHAOS_REQUIRE_DRIVERS:-}" ]; then
    echo "drivers: $1 not found, and LOCKCHAOS_REQUIRE_DRIVERS is set" >&2
    exit 1
  fi
  echo "drivers: $1 not found: its driver locks are not installed"
}
t0=$(date +%s)
if command -v python3 >/dev/null 2>&1; then
  bash scripts/drivers-python.sh >/dev/null
  echo "drivers: python installed ($(( $(date +%s) - t0 ))s)"
else missing python3; fi
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  bash scripts/drivers-node.sh
else missing "node/npm"; fi
if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then
  bash scripts/drivers-java.sh >/dev/null
  echo "drivers: java built ($(( $(date +%s) - t0 ))s)"
else missing "java/mvn"; fi
echo "drivers: done in $(( $(date +%s) - t0 ))s"
