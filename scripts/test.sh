#!/usr/bin/env bash
# The test command (README): installs redis-server/redis-sentinel if missing,
# checks formatting and vet, then runs every test with the race detector.
# Tests start their own redis-server / redis-sentinel processes on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
unformatted=$(gofmt -l . | grep -v '^vendor/' || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -race -count=1 -timeout 30m ./...
