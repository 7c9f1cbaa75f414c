#!/bin/sh
# Starts lockchaos' Redisson driver (docs/driver-protocol.md) with the arguments given
# (--lock NAME). The jar is the pinned one (target/), or, when LOCKCHAOS_LOCK_VERSION names
# another Redisson version, that version's jar from the cache, built on demand by
# scripts/drivers-java.sh (its output goes to stderr: stdout carries protocol lines only).
# The JVM flags are for a fast start; the class-data-sharing archive (.jsa beside the jar) is
# written by scripts/drivers-java.sh.
set -e
# C1 only, the serial collector, no perf-data file; every JVM log line to stderr (a CDS archive
# that does not fit this JVM must not print on stdout). The heap is the JVM's default: a small one
# (-Xmx64m) saves 19 MiB a process but fills under RedissonRedLock's interrupted spin (README.md).
flags="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xshare:auto -Xlog:disable -Xlog:all=warning:stderr"
if [ "${1:-}" = "--print-java-flags" ]; then
  echo "$flags"
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
jar="$here/target/lockchaos-driver-java.jar"
if [ -n "${LOCKCHAOS_LOCK_VERSION:-}" ]; then
  jar=$("$here/../../scripts/drivers-java.sh" --jar "$LOCKCHAOS_LOCK_VERSION")
elif [ ! -f "$jar" ]; then
  "$here/../../scripts/drivers-java.sh" >&2
fi
if [ -f "${jar%.jar}.jsa" ]; then
  flags="$flags -XX:SharedArchiveFile=${jar%.jar}.jsa"
fi
# shellcheck disable=SC2086 # the flags are words
exec java ${LOCKCHAOS_JAVA_OPTS:-$flags} -jar "$jar" "$@"
