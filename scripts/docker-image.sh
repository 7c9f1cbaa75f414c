#!/usr/bin/env bash
# Builds the docker backend's image (default lockchaos/redis:local) without
# any registry: FROM scratch, holding the host's redis-server (Debian's) and
# the shared libraries it links, plus the dynamic loader.
#
#   scripts/docker-image.sh [IMAGE]      (or LOCKCHAOS_IMAGE=...)
#
# Exits 0 with a message when docker (client or engine) is unavailable.
set -euo pipefail

image="${1:-${LOCKCHAOS_IMAGE:-lockchaos/redis:local}}"
server="${REDIS_SERVER:-$(command -v redis-server || true)}"

if ! command -v docker >/dev/null 2>&1; then
	echo "docker-image: no docker client; skipping the image build"
	exit 0
fi
if ! docker info >/dev/null 2>&1; then
	echo "docker-image: no docker engine answers; skipping the image build"
	exit 0
fi
if [ -z "$server" ]; then
	echo "docker-image: redis-server not found (apt-get install redis-server)" >&2
	exit 1
fi
# Debian's redis-server is a symlink (to redis-check-rdb: one binary that acts
# by argv[0]); the image gets the content under the name redis-server.
version="$("$server" --version | awk '{print $3}')"
server="$(readlink -f "$server")"

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/root/usr/bin" "$ctx/root/data" "$ctx/root/tmp"
cp "$server" "$ctx/root/usr/bin/redis-server"

# Every library ldd lists, and the loader (the line with no "=>"), each copied
# at its path; a symlinked path is copied as its target's content.
ldd "$server" | awk '/=>/ { if ($3 ~ /^\//) print $3; next } $1 ~ /^\// { print $1 }' | while read -r lib; do
	mkdir -p "$ctx/root$(dirname "$lib")"
	cp -L "$lib" "$ctx/root$lib"
done

cat >"$ctx/Dockerfile" <<'EOF'
FROM scratch
COPY root/ /
ENV PATH=/usr/bin:/bin
WORKDIR /data
CMD ["redis-server", "--bind", "127.0.0.1"]
EOF

if ! docker build -q -t "$image" "$ctx" >"$ctx/build.log" 2>&1; then
	cat "$ctx/build.log" >&2
	exit 1
fi
echo "docker-image: built $image from $server (redis $version)"
