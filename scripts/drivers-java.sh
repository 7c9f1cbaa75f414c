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
# A jar newer than its sources (pom.xml, src/, train_cds.py, run.sh, the checksum list, this
# script) is not built again unless LOCKCHAOS_REBUILD=1.
#
# The cache is $LOCKCHAOS_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/lockchaos)/drivers/java; a
# version's runtime jars' checksums are written there at its first build (deps.sha256) and
# checked at every later one. Progress goes to stderr; stdout has the jar's path only.
# LOCKCHAOS_MAVEN_REPO, when set, is Maven's local repository (default ~/.m2/repository).
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
# Up to date: the jar and its archive newer than every source (LOCKCHAOS_REBUILD=1 builds anyway).
if [ -z "${LOCKCHAOS_REBUILD:-}" ] && [ -f "$jar" ] && [ -f "${jar%.jar}.jsa" ] && [ -f "$sums" ] &&
  [ -z "$(find "$src/pom.xml" "$src/src" "$src/train_cds.py" "$src/lcproto.py" "$src/run.sh" "$sums" "$0" -newer "$jar" 2>/dev/null)" ]; then
  echo "drivers-java: $jar is up to date" >&2
  echo "$jar"
  exit 0
fi
command -v mvn >/dev/null || { echo "drivers-java: mvn (Maven 3.8+) and a JDK 17 are needed" >&2; exit 1; }
start=$(date +%s%N)
if [ -n "${LOCKCHAOS_MAVEN_REPO:-}" ]; then
  args+=("-Dmaven.repo.local=$LOCKCHAOS_MAVEN_REPO")
fi
mvn -q -B -C -f "$src/pom.xml" "-Dbuild.dir=$out" "${args[@]}" package dependency:copy-dependencies \
  -DskipTests -DincludeScope=runtime "-DoutputDirectory=$out/deps" >&2
# The runtime jars, by name and SHA-256, against the pinned list (or this version's first build).
(cd "$out/deps" && sha256sum -- *.jar | sort -k2) > "$out/deps.sha256.now"
if [ -f "$sums" ]; then
  if ! diff -u "$sums" "$out/deps.sha256.now" >&2; then
    echo "drivers-java: the runtime jars differ from $sums (above); removed $jar" >&2
    rm -f "$jar" "${jar%.jar}.jsa"
    exit 1
  fi
else
  cp "$out/deps.sha256.now" "$sums"
  echo "drivers-java: wrote $sums (checked at every later build)" >&2
fi
# The class-data-sharing archive run.sh starts the JVM with (a training run against a
# redis-server of our own), where redis-server and python3 are at hand; without it the
# driver starts all the same, only slower.
rm -f "${jar%.jar}.jsa"
if command -v redis-server >/dev/null && command -v python3 >/dev/null; then
  # shellcheck disable=SC2086 # the flags are words
  python3 "$src/train_cds.py" "$jar" "${jar%.jar}.jsa" $("$src/run.sh" --print-java-flags) >&2 ||
    echo "drivers-java: no CDS archive (the training run failed): the driver starts without it" >&2
fi
printf 'drivers-java: built %s (Redisson %s) in %d ms, %s bytes\n' "$jar" "${version:-$pinned}" \
  $((($(date +%s%N) - start) / 1000000)) "$(stat -c %s "$jar")" >&2
echo "$jar"
