#!/bin/sh
# drivers/python/run.sh LOCK: runs the Python driver of LOCK (redis-py, redis-py-asyncio,
# python-redis-lock, pottery-redlock) with the pinned libraries, installing them into the
# driver cache first if they are not there (scripts/drivers-python.sh).
# LOCKCHAOS_LOCK_VERSION=X runs it with version X of the lock's library instead
# (installed on demand into its own venv in the cache).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lock=${1:?usage: run.sh LOCK}
case "$lock" in
redis-py | redis-py-asyncio) pkg=redis ;;
python-redis-lock) pkg=python-redis-lock ;;
pottery-redlock) pkg=pottery ;;
*) echo "run.sh: unknown lock $lock" >&2; exit 2 ;;
esac
if [ -n "${LOCKCHAOS_LOCK_VERSION:-}" ]; then
	py=$("$here/../../scripts/drivers-python.sh" --print-python --version "$pkg==$LOCKCHAOS_LOCK_VERSION")
else
	py=$("$here/../../scripts/drivers-python.sh" --print-python)
fi
exec "$py" "$here/lockchaos_driver.py" "$lock"
