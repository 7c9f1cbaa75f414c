#!/usr/bin/env bash
# Every Go module of the repository (each go.mod: the main module and the
# example modules) must be tidy: `go mod tidy -diff` changes nothing, so a
# fresh copy builds and tests with plain `go build` / `go test` (an example
# module replaces the main module by ../.., and needs go.sum entries for
# its dependencies, which drift when the main module's go.mod changes).
# Fails naming every module that is not, with the diff that would fix it.
# It reads the module proxy only for modules missing from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off
failed=()
while IFS= read -r mod; do
  dir=$(dirname "$mod")
  if ! out=$(cd "$dir" && go mod tidy -diff 2>&1); then
    echo "module $dir is not tidy (run: cd $dir && go mod tidy):"
    echo "$out" | grep -v '^go: downloading ' || true
    failed+=("$dir")
  fi
done < <(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' | sort)
if [ ${#failed[@]} -gt 0 ]; then
  echo "tidy-check: ${#failed[@]} module(s) not tidy: ${failed[*]}"
  exit 1
fi
echo "tidy-check: every module is tidy"
