#!/usr/bin/env bash
# The test command (README): installs redis-server/redis-sentinel if missing,
# checks formatting and vet, then runs both tiers of tests:
# - the default tier, `go test ./...` (every package's logic, under 3
#   minutes; what a contributor runs before each commit), here with the race
#   detector;
# - the long tier: the tests the default tier skipped for it (testenv.Long:
#   end-to-end runs on real servers, explorations, builds of the binary and
#   of example modules), with LOCKCHAOS_LONG=1. Without -race: they measure
#   timing (margins within 10% of the TTL, findings within a budget, bench
#   ratios) that the race detector's 5-10x slowdown makes meaningless, and the
#   code they drive already ran under -race in the default tier.
# - the drivers' own tests (drivers/python, drivers/node, drivers/java and
#   the worked examples): each language's driver programs over the
#   lock-client protocol against real redis-servers.
# Tests start their own redis-server / redis-sentinel processes on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# The driver locks' pinned libraries (Python venv, npm ci, the Redisson jar).
bash scripts/drivers.sh
# Docker tests run the locally built image (scripts/docker-image.sh), never
# one a registry would have to provide.
export LOCKCHAOS_IMAGE="${LOCKCHAOS_IMAGE:-lockchaos/redis:local}"
unformatted=$(gofmt -l . | grep -v '^vendor/' || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/longtier" ./internal/testenv/longtier
echo "default tier: go test -race ./..."
go test -race -count=1 -timeout 20m -json ./... | "$tmp/longtier" "$tmp/long.pattern"
echo "long tier: LOCKCHAOS_LONG=1 go test -run '$(cat "$tmp/long.pattern")' ./..."
LOCKCHAOS_LONG=1 go test -count=1 -timeout 40m -run "$(cat "$tmp/long.pattern")" ./...
echo "drivers: their own tests"
if command -v python3 >/dev/null 2>&1; then
  (cd drivers/python && python3 -m pytest -q -p no:cacheprovider .)
fi
if command -v node >/dev/null 2>&1; then
  node --test drivers/node
fi
if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then
  bash drivers/java/test.sh
fi
