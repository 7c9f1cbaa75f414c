#!/usr/bin/env bash
# Builds lockchaos's own image (default lockchaos/lockchaos:local) from the
# repository's Dockerfile without any registry: a static binary (CGO off)
# FROM scratch. Push it where your cluster pulls from, then
# `lockchaos k8s --image ...` (docs/scale-out.md, "Kubernetes").
#
#   scripts/lockchaos-image.sh [IMAGE]
#
# Exits 0 with a message when docker (client or engine) is unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."
image="${1:-lockchaos/lockchaos:local}"

if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
	echo "lockchaos-image: no docker engine answers; skipping the image build"
	exit 0
fi
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$ctx/lockchaos" .
certs=/etc/ssl/certs/ca-certificates.crt
if [ -f "$certs" ]; then cp "$certs" "$ctx/ca-certificates.crt"; else : >"$ctx/ca-certificates.crt"; fi
mkdir -m 1777 "$ctx/tmp"
cp Dockerfile "$ctx/Dockerfile"
if ! docker build -q -t "$image" "$ctx" >"$ctx/build.log" 2>&1; then
	cat "$ctx/build.log" >&2
	exit 1
fi
echo "lockchaos-image: built $image"
