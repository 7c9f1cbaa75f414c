#!/usr/bin/env bash
# Builds the Redisson driver and the worked example (examples/java-driver), then tests both over
# the lock-client protocol against real redis-server processes (drivers/java/test_driver.py,
# under 90 s). Needs a JDK 17, Maven, python3 and redis-server.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/drivers-java.sh" >/dev/null
(cd "$root/examples/java-driver" && mvn -q -B -C package >&2)
exec python3 "$root/drivers/java/test_driver.py" "$@"
