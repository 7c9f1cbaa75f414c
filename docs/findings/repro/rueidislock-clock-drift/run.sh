#!/usr/bin/env bash
# Reproduces docs/findings/rueidislock-clock-drift.md without lockchaos:
#   bash run.sh                          # against the rueidis in go.mod (v1.0.79)
#   REPRO_VERSION=v1.0.34 bash run.sh    # against another release; go.mod is not changed
# Extra arguments go to `go test` (e.g. -run, -count). Exits with go test's exit code.
# Needs Go, redis-server (PATH, or REDIS_SERVER=/path/to/redis-server), and libfaketime or a C compiler
# (cc) for testdata/clockshim.c: without either the test is skipped (see the test file).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export GOWORK=off
dir=$here
if [ -n "${REPRO_VERSION:-}" ]; then
  # A copy of the module, moved to that release, in a temporary directory.
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  cp -R "$here"/. "$dir"/
  (cd "$dir" && go get "github.com/redis/rueidis@$REPRO_VERSION" && go mod tidy)
fi
cd "$dir"
rc=0
go test -count=1 -v ./... "$@" || rc=$?
exit "$rc"
