#!/usr/bin/env bash
# Prints the summary (incidents, violations with evidence, fault effects) of
# every seed that a matrix found unexpected, so a CI log says why a cell did
# not match, not only that it did not (the run directories do not outlive
# the CI machine). Usage: scripts/explain-matrix.sh MATRIX_DIR
set -uo pipefail
dir=${1:?usage: explain-matrix.sh MATRIX_DIR}
[ -f "$dir/matrix.md" ] || { echo "explain-matrix: no $dir/matrix.md"; exit 0; }
grep -o 'seed [0-9]*: unexpected[^`]*`[^`]*`' "$dir/matrix.md" | sed 's/.*`\(.*\)`/\1/' | sort -u | while read -r run; do
  echo "=== $run"
  if [ -f "$run/summary.md" ]; then cat "$run/summary.md"; else ls "$run" 2>/dev/null; fi
done
