#!/bin/sh
# Starts lockchaos' Redisson driver (docs/driver-protocol.md) with the arguments given
# (--lock NAME). The jar is the pinned one (target/), or, when LOCKCHAOS_LOCK_VERSION names
# another Redisson version, that version's jar from the cache, built on demand by
# scripts/drivers-java.sh (its output goes to stderr: stdout carries protocol lines only).
# The JVM flags are for a fast start: C1 only, the serial collector, the CDS archive.
set -e
here=$(cd "$(dirname "$0")" && pwd)
jar="$here/target/lockchaos-driver-java.jar"
if [ -n "${LOCKCHAOS_LOCK_VERSION:-}" ]; then
  jar=$("$here/../../scripts/drivers-java.sh" --jar "$LOCKCHAOS_LOCK_VERSION")
elif [ ! -f "$jar" ]; then
  "$here/../../scripts/drivers-java.sh" >&2
fi
exec java ${LOCKCHAOS_JAVA_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -XX:-UsePerfData} -jar "$jar" "$@"
