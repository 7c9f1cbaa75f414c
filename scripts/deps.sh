#!/usr/bin/env bash
# Installs what the tests need from Debian's packages, where missing:
# redis-server, redis-sentinel, redis-tools (redis-benchmark for bench),
# libxml2-utils (xmllint: the JUnit schema check), gcc (the clock shim the
# clock faults preload), faketime and libfaketime (a driver process's clock,
# docs/driver-protocol.md), docker.io (dockerd, for the docker backend's
# tests), and chromium (optional: the browser test of report.html and
# card.html, which skips without it unless LOCKCHAOS_REQUIRE_CHROMIUM=1;
# LOCKCHAOS_NO_CHROMIUM=1 leaves it out), jq (scripts/bisect-go.sh reads runs'
# results.json with it). Needs root (apt-get). The drivers'
# own libraries (Python, Node, Java) are installed by scripts/drivers.sh.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || missing+=(redis-sentinel)
command -v redis-benchmark >/dev/null 2>&1 || missing+=(redis-tools)
command -v xmllint >/dev/null 2>&1 || missing+=(libxml2-utils)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || [ -e /usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1 ] || missing+=(libfaketime)
if [ "${LOCKCHAOS_NO_DOCKER:-}" = "" ] && ! command -v dockerd >/dev/null 2>&1; then
  missing+=(docker.io)
fi
if [ "${LOCKCHAOS_NO_CHROMIUM:-}" = "" ] && ! command -v chromium >/dev/null 2>&1; then
  missing+=(chromium)
fi
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the packages from starting their own services: tests
  # start every server they use themselves.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi
redis-server --version
