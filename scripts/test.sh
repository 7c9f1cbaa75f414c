#!/usr/bin/env bash
# The test command (README): installs redis-server/redis-sentinel if missing,
# checks formatting and vet, then runs every test with the race detector.
# Tests start their own redis-server / redis-sentinel processes on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# Docker tests run the locally built image (scripts/docker-image.sh), never
# one a registry would have to provide.
export LOCKCHAOS_IMAGE="${LOCKCHAOS_IMAGE:-lockchaos/redis:local}"
unformatted=$(gofmt -l . | grep -v '^vendor/' || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -race -count=1 -timeout 30m ./...
