#!/usr/bin/env bash
# Reproduces docs/findings/driver-locks-no-validity.md without lockchaos: pytest tests that start
# their own redis-server and pause the holder of redis-py's redis.lock.Lock and
# redis.asyncio.lock.Lock (timeout 200 ms) for 600 ms, and of pottery's Redlock and
# python-redis-lock's Lock (skipped where the venv lacks them) (test_no_validity.py).
#
#   bash docs/findings/repro/driver-locks-no-validity/run.sh                     redis-py 8.1.0 (lockchaos's pin)
#   REPRO_VERSION=5.0.8 bash docs/findings/repro/driver-locks-no-validity/run.sh another redis-py release, from PyPI
#
# The library comes from the venv scripts/drivers-python.sh installs into the driver cache
# (drivers/python/requirements.txt, or that set with redis==$REPRO_VERSION); pytest
# (pinned below) from a venv of this reproducer's own in the same cache. Needs python3, pip's
# access to PyPI on the first run of a version, and /usr/bin/redis-server (REDIS_SERVER=PATH for
# another). Works from any directory. Exits with pytest's exit code: non-zero, with a line
# starting "REPRODUCED: ", when the finding shows.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../../.." && pwd)
pkg=redis
pytest_pin=pytest==9.2.0

if [ -n "${REPRO_VERSION:-}" ]; then
	py=$(bash "$root/scripts/drivers-python.sh" --print-python --version "$pkg==$REPRO_VERSION")
else
	py=$(bash "$root/scripts/drivers-python.sh" --print-python)
fi

# pytest is not in the drivers' set: a venv of its own beside the drivers' ones, installed once.
cache=${LOCKCHAOS_DRIVER_CACHE:-$HOME/.cache/lockchaos/drivers}/python
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
tools="$cache/repro-${pytest_pin/==/-}-py$pyver"
if [ ! -f "$tools/installed" ]; then
	mkdir -p "$cache"
	exec 9>"$cache/.repro-pytest.lock"
	flock -w 600 9 || { echo "run.sh: $cache/.repro-pytest.lock held for 600 s" >&2; exit 2; }
	if [ ! -f "$tools/installed" ]; then
		tmp="$tools.tmp.$$"
		rm -rf "$tmp"
		trap 'rm -rf "$tmp"' EXIT
		echo "run.sh: installing $pytest_pin into $tools" >&2
		"$py" -m venv "$tmp" >&2
		"$tmp/bin/python" -m pip --disable-pip-version-check --no-input -q install "$pytest_pin" >&2
		"$tmp/bin/python" -m pip freeze --disable-pip-version-check >"$tmp/installed"
		rm -rf "$tools"
		mv "$tmp" "$tools"
		trap - EXIT
	fi
	exec 9>&-
fi

export PYTHONPATH="$tools/lib/python$pyver/site-packages" PYTHONDONTWRITEBYTECODE=1
echo "run.sh: $("$py" -c 'import importlib.metadata as m; print(", ".join(p + " " + m.version(p) for p in ("redis", "pottery", "python-redis-lock") if p in {d.metadata["Name"].lower() for d in m.distributions()}))'), $("$py" -m pytest --version 2>&1), $("${REDIS_SERVER:-/usr/bin/redis-server}" --version | cut -d' ' -f1-3)"
set +e
cd "$here"
"$py" -m pytest -c /dev/null --rootdir "$here" --confcutdir "$here" -p no:cacheprovider \
	-v -rfEs --tb=short test_no_validity.py
exit $?
