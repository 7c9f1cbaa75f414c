#!/usr/bin/env bash
# Builds the Redisson driver, the driver kit (drivers/java/kit) and the worked example on it
# (examples/java-driver), then tests the driver and the example over
# the lock-client protocol against real redis-server processes (drivers/java/test_driver.py,
# under 2 minutes; about 55 s here). Needs a JDK 17, Maven, python3 and redis-server.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/drivers-java.sh" >/dev/null
# The example is built on the driver kit: the kit goes into the local Maven repository first.
# clean: the example's jar is shaded, and a package over the last one keeps the kit classes
# already in it (a changed kit would go untested).
(cd "$root/drivers/java/kit" && mvn -q -B -C clean install >&2)
(cd "$root/examples/java-driver" && mvn -q -B -C clean package >&2)
exec python3 "$root/drivers/java/test_driver.py" "$@"
