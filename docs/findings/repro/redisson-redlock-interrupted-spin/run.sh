#!/usr/bin/env bash
# Reproduces docs/findings/redisson-redlock-interrupted-spin.md without lockchaos: a JUnit 5 test
# (Maven) that starts three redis-servers of its own, puts a proxy delaying what Redisson sends by
# 15 ms in front of each, and interrupts the thread inside RedissonRedLock.lock(lease) while the
# first master's lock script is on the wire.
#
#   bash run.sh                        Redisson 4.7.0 (the version lockchaos pins)
#   REPRO_VERSION=3.16.3 bash run.sh   another Redisson release
#
# Needs a JDK 17+, Maven 3.8+ (it downloads Redisson and JUnit from Maven Central on the first run)
# and /usr/bin/redis-server. Exits with Maven's exit code: non-zero, with a line starting
# "REPRODUCED: ", when the bug shows.
set -u
cd "$(dirname "$0")" || exit 2
args=(-q -B)
if [ -n "${REPRO_VERSION:-}" ]; then
  args+=("-Dredisson.version=$REPRO_VERSION")
fi
mvn "${args[@]}" test
exit $?
