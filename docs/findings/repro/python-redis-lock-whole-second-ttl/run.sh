#!/usr/bin/env bash
# Reproduces docs/findings/python-redis-lock-whole-second-ttl.md without lockchaos: pytest tests
# that start their own redis-server and drive python-redis-lock's Lock with a 200 ms and a 1.5 s
# expire (test_whole_second_ttl.py).
#
#   bash docs/findings/repro/python-redis-lock-whole-second-ttl/run.sh                     python-redis-lock 4.0.1 (lockchaos's pin)
#   REPRO_VERSION=3.7.0 bash docs/findings/repro/python-redis-lock-whole-second-ttl/run.sh another release, from PyPI
#
# The library comes from the venv scripts/drivers-python.sh installs into the driver cache
# (drivers/python/requirements.txt, or that set with python-redis-lock==$REPRO_VERSION); pytest
# (pinned below) from a venv of this reproducer's own in the same cache. Needs python3, pip's
# access to PyPI on the first run of a version, and /usr/bin/redis-server (REDIS_SERVER=PATH for
# another). Works from any directory. Exits with pytest's exit code: non-zero, with a line
# starting "REPRODUCED: ", when the finding shows.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../../.." && pwd)
pkg=python-redis-lock
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
echo "run.sh: $("$py" -c 'import importlib.metadata as m; print(", ".join(p + " " + m.version(p) for p in ("python-redis-lock", "redis")))'), $("$py" -m pytest --version 2>&1), $("${REDIS_SERVER:-/usr/bin/redis-server}" --version | cut -d' ' -f1-3)"
set +e
cd "$here"
"$py" -m pytest -c /dev/null --rootdir "$here" --confcutdir "$here" -p no:cacheprovider \
	-v -rfEs --tb=short test_whole_second_ttl.py
exit $?
