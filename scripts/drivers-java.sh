#!/usr/bin/env bash
# Builds lockchaos' Java drivers (drivers/java): one runnable jar with Redisson, Jackson and
# slf4j-simple, every version exact in drivers/java/pom.xml. Maven verifies each download's
# checksum (-C, --strict-checksums); the pinned build also checks every runtime jar against
# drivers/java/deps.sha256.
#
#   scripts/drivers-java.sh                 the pinned Redisson -> drivers/java/target/lockchaos-driver-java.jar
#   scripts/drivers-java.sh VERSION         Redisson VERSION -> $cache/redisson-VERSION/lockchaos-driver-java.jar
#   scripts/drivers-java.sh --jar VERSION   the same, built only when missing; prints the jar's path alone
#
# The cache is $LOCKCHAOS_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/lockchaos)/drivers/java; a
# version's runtime jars' checksums are written there at its first build (deps.sha256) and
# checked at every later one. Progress goes to stderr; stdout has the jar's path only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/drivers/java"
cache="${LOCKCHAOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockchaos}/drivers/java"
only_missing=0
if [ "${1:-}" = "--jar" ]; then
  only_missing=1
  shift
fi
version="${1:-}"
if [ -n "$version" ] && ! [[ "$version" =~ ^[0-9]+(\.[0-9]+)*$ ]]; then
  echo "drivers-java: $version is not a Redisson version (e.g. 3.40.2)" >&2
  exit 2
fi
pinned=$(sed -n 's:.*<redisson.version>\(.*\)</redisson.version>.*:\1:p' "$src/pom.xml")
if [ -z "$version" ] || [ "$version" = "$pinned" ]; then
  out="$src/target"
  sums="$src/deps.sha256"
  args=()
else
  out="$cache/redisson-$version"
  sums="$out/deps.sha256"
  args=("-Dredisson.version=$version")
fi
jar="$out/lockchaos-driver-java.jar"
if [ "$only_missing" = 1 ] && [ -f "$jar" ]; then
  echo "$jar"
  exit 0
fi
command -v mvn >/dev/null || { echo "drivers-java: mvn (Maven 3.8+) and a JDK 17 are needed" >&2; exit 1; }
start=$(date +%s%N)
mvn -q -B -C -f "$src/pom.xml" "-Dbuild.dir=$out" "${args[@]}" package dependency:copy-dependencies \
  -DskipTests -DincludeScope=runtime "-DoutputDirectory=$out/deps" >&2
# The runtime jars, by name and SHA-256, against the pinned list (or this version's first build).
(cd "$out/deps" && sha256sum -- *.jar | sort -k2) > "$out/deps.sha256.now"
if [ -f "$sums" ]; then
  if ! diff -u "$sums" "$out/deps.sha256.now" >&2; then
    echo "drivers-java: the runtime jars differ from $sums (above)" >&2
    exit 1
  fi
else
  cp "$out/deps.sha256.now" "$sums"
  echo "drivers-java: wrote $sums (checked at every later build)" >&2
fi
printf 'drivers-java: built %s (Redisson %s) in %d ms, %s bytes\n' "$jar" "${version:-$pinned}" \
  $((($(date +%s%N) - start) / 1000000)) "$(stat -c %s "$jar")" >&2
echo "$jar"
