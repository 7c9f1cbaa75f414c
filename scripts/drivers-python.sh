#!/usr/bin/env bash
# Installs the Python driver locks' libraries into a venv in the driver cache
# and prints nothing but the venv's python on stdout (with --print-python),
# so that a caller can run the driver with it. Idempotent: a venv already
# installed is reused.
#
#   scripts/drivers-python.sh                      # the pinned set: drivers/python/requirements.txt,
#                                                  # exact versions and hashes (pip --require-hashes)
#   scripts/drivers-python.sh --version redis==5.0.8   # the pinned set with one library at another
#                                                  # version (exact version, resolved by pip: no hashes)
#   scripts/drivers-python.sh --print-python [--version PKG==X]
#
# Cache: ${LOCKCHAOS_DRIVER_CACHE:-$HOME/.cache/lockchaos/drivers}/python/<set>, where <set> names the
# Python version and a hash of the requirement lines. Python: $LOCKCHAOS_PYTHON or python3.
# Everything but the printed path goes to stderr (a driver's stdout carries protocol lines only).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
req="$root/drivers/python/requirements.txt"
py=${LOCKCHAOS_PYTHON:-python3}
cache=${LOCKCHAOS_DRIVER_CACHE:-$HOME/.cache/lockchaos/drivers}/python
print=0
versions=()
while [ $# -gt 0 ]; do
	case "$1" in
	--print-python) print=1 ;;
	--version)
		shift
		[ $# -gt 0 ] || { echo "drivers-python.sh: --version needs PKG==X" >&2; exit 2; }
		case "$1" in
		*==*) versions+=("$1") ;;
		*) echo "drivers-python.sh: --version $1: want PKG==X" >&2; exit 2 ;;
		esac
		;;
	-h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" >&2; exit 0 ;;
	*) echo "drivers-python.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

norm() { echo "$1" | tr 'A-Z_.' 'a-z--'; }

# The requirement lines of the pinned set (name==version), with --version's replacing their package's.
pins=$(grep -E '^[A-Za-z0-9._-]+==' "$req" | sed -E 's/[[:space:]\\]+$//' | sed -E 's/[[:space:]].*$//')
hashed=1
if [ ${#versions[@]} -gt 0 ]; then
	hashed=0
	for v in "${versions[@]}"; do
		name=$(norm "${v%%==*}")
		found=0
		new=""
		while IFS= read -r line; do
			if [ "$(norm "${line%%==*}")" = "$name" ]; then line=$v; found=1; fi
			new+="$line"$'\n'
		done <<<"$pins"
		[ $found = 1 ] || { echo "drivers-python.sh: $name is not one of the drivers' libraries" >&2; exit 2; }
		pins=${new%$'\n'}
	done
fi
if [ $hashed = 1 ]; then
	set_hash=$(sha256sum "$req" | cut -c1-12)
else
	set_hash=$(printf '%s\n' "$pins" | sha256sum | cut -c1-12)
fi
# Fast path (a driver starts through here): a set installed before for this python, found
# without starting python (a pyenv shim alone takes a quarter of a second).
index="$cache/index/$(printf '%s %s\n' "$py" "$set_hash" | sha256sum | cut -c1-12)"
if [ -f "$index" ]; then
	venv=$(cat "$index")
	if [ -f "$venv/installed" ] && [ -x "$venv/bin/python" ]; then
		[ $print = 0 ] || echo "$venv/bin/python"
		exit 0
	fi
fi
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
venv="$cache/py$pyver-$set_hash"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 600 9 || { echo "drivers-python.sh: $cache/.lock held for 600 s" >&2; exit 1; }
if [ ! -f "$venv/installed" ]; then
	tmp="$venv.tmp.$$"
	rm -rf "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	echo "drivers-python.sh: installing into $venv" >&2
	"$py" -m venv "$tmp" >&2
	pip=("$tmp/bin/python" -m pip --disable-pip-version-check --no-input -q)
	if [ $hashed = 1 ]; then
		"${pip[@]}" install --require-hashes --only-binary=:all: -r "$req" >&2
	else
		# Another version of one library: the others stay at their pins where pip
		# can keep them; the one asked for alone (with what it needs) otherwise.
		# shellcheck disable=SC2086
		if ! "${pip[@]}" install $pins >&2; then
			echo "drivers-python.sh: the pinned set does not resolve with ${versions[*]}; installing ${versions[*]} alone" >&2
			"${pip[@]}" install "${versions[@]}" >&2
		fi
	fi
	"$tmp/bin/python" -m pip freeze --disable-pip-version-check >"$tmp/installed"
	rm -rf "$venv"
	mv "$tmp" "$venv"
	trap - EXIT
	echo "drivers-python.sh: installed $(tr '\n' ' ' <"$venv/installed")" >&2
fi
mkdir -p "$cache/index"
echo "$venv" >"$index.tmp.$$" && mv "$index.tmp.$$" "$index"
if [ $print = 1 ]; then
	echo "$venv/bin/python"
fi
