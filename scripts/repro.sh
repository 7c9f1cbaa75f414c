#!/usr/bin/env bash
# Runs the findings' standalone reproducers (docs/findings/repro/*/run.sh:
# each the library's own test framework, no lockchaos, its own
# redis-server) against the versions lockchaos pins, and checks that each
# reproduces its finding: exits non-zero AND prints a line with
# "REPRODUCED:" (a setup failure never does). Prints each one's time.
#
#   bash scripts/repro.sh              every reproducer
#   bash scripts/repro.sh NAME...      those (the folder names)
#
# Exit 0 when every one reproduced; 1 otherwise, with the output of those
# that did not.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for d in "$root"/docs/findings/repro/*/; do
		[ -x "$d/run.sh" ] && names+=("$(basename "$d")")
	done
fi
rc=0
for n in "${names[@]}"; do
	run="$root/docs/findings/repro/$n/run.sh"
	if [ ! -x "$run" ]; then
		echo "repro: $n: no executable $run" >&2
		rc=1
		continue
	fi
	log=$(mktemp)
	t0=$(date +%s.%N)
	bash "$run" >"$log" 2>&1
	code=$?
	took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
	if [ "$code" -ne 0 ] && grep -q "REPRODUCED:" "$log"; then
		echo "repro: $n: reproduced (exit $code) in ${took}s: $(grep -m1 -o 'REPRODUCED:.*' "$log" | cut -c1-200)"
	else
		echo "repro: $n: NOT reproduced (exit $code) in ${took}s; its output:"
		tail -40 "$log"
		rc=1
	fi
	rm -f "$log"
done
exit "$rc"
