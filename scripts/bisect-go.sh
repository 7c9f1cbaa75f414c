#!/usr/bin/env bash
# Runs one scenario against released versions of a Go adapter's library and
# records, per version, whether it builds and how often each check failed.
#
#   scripts/bisect-go.sh [options] MODULE SCENARIO LOCK SEEDS [VERSION...]
#
#   scripts/bisect-go.sh github.com/redis/rueidis holder-partitioned-long rueidislock 1-3
#   scripts/bisect-go.sh --bisect github.com/redis/rueidis holder-partitioned-long rueidislock 1-3
#   scripts/bisect-go.sh github.com/go-redsync/redsync/v4 gc-pause redsync 1-2 v4.11.0 v4.18.1
#
# Without VERSIONs it takes every version the Go module proxy serves
# (`go list -m -versions MODULE`; a proxy may serve only some releases).
# Versions are tried oldest first. For each one it copies the repository's
# tracked files into a temporary directory (the repository itself is never
# changed), sets `go mod edit -require=MODULE@V`, `go mod tidy`, builds the
# binary, checks with `go version -m` that the binary holds MODULE@V, and
# runs `lockchaos run SCENARIO --lock LOCK --seeds SEEDS` (no --expect: the
# verdicts themselves are recorded). When the module graph picks a newer
# version than V (a dependency requires it), a replace directive forces V and
# the table's note says so. A version whose tidy or build fails is
# reported as "does not build" with the first error, never skipped.
#
# Options:
#   --out DIR        where the table, logs and runs go (default runs/bisect-<lock>-<time>)
#   --checks LIST    the checks whose failure is the finding (default mutex,resource)
#   --timeout D      bound of one version's runs, as timeout(1) takes it (default 600s)
#   --build-timeout D  bound of one version's tidy + build (default 600s)
#   --backend B      lockchaos's --backend (default process)
#   --bisect         instead of every version: the newest and the oldest, then a
#                    binary search for the boundary between a version that fails
#                    and one that does not (assumes one change of behaviour)
#
# Writes OUT/versions.tsv (one line per version tried), OUT/versions.md (the
# table and the summary: earliest and latest version that fail, and the
# versions that do not), OUT/V/ (the runs), OUT/V.build.log, OUT/V.run.log.
# A version's verdict:
#   fails          some check of --checks was invalid on at least one seed
#   passes         every check of --checks valid on every seed
#   unknown        neither (a check unknown, or the runs timed out before a verdict)
#   does not build tidy or build failed (the API changed, or the version is not served)
# Exit 0 when every version got a verdict, 1 when the script itself failed.
# BISECT_GO_FAKE="V=fails V=passes V=does_not_build …" (tests only) stands for
# the builds and runs, to check the choice of versions and the summary.
set -euo pipefail

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }

out="" checks="mutex,resource" run_timeout=600s build_timeout=600s backend=process mode=scan
while [[ $# -gt 0 ]]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--checks) checks=$2; shift 2 ;;
	--timeout) run_timeout=$2; shift 2 ;;
	--build-timeout) build_timeout=$2; shift 2 ;;
	--backend) backend=$2; shift 2 ;;
	--bisect) mode=bisect; shift ;;
	-h | --help) usage; exit 0 ;;
	--*) echo "bisect-go: unknown option $1" >&2; exit 1 ;;
	*) break ;;
	esac
done
if [[ $# -lt 4 ]]; then
	usage >&2
	exit 1
fi
module=$1 scenario=$2 lock=$3 seeds=$4
shift 4
command -v jq >/dev/null || { echo "bisect-go: needs jq" >&2; exit 1; }

repo=$(cd "$(dirname "$0")/.." && pwd)
[[ -n $out ]] || out="$repo/runs/bisect-$lock-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The versions, oldest first.
if [[ $# -gt 0 ]]; then
	mapfile -t versions < <(printf '%s\n' "$@" | sort -V)
else
	mapfile -t versions < <(cd "$repo" && timeout 120 go list -m -versions "$module" | tr ' ' '\n' | tail -n +2 | sort -V)
	[[ ${#versions[@]} -gt 0 ]] || { echo "bisect-go: the module proxy serves no version of $module" >&2; exit 1; }
fi

# A scenario given as a file is taken from where it is.
if [[ -f $scenario ]]; then
	scenario=$(cd "$(dirname "$scenario")" && pwd)/$(basename "$scenario")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bisect-go.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$repo" && git ls-files -z | tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$work"
cp "$work/go.mod" "$work/go.mod.orig"
cp "$work/go.sum" "$work/go.sum.orig"

IFS=, read -r -a checklist <<<"$checks"
tsv="$out/versions.tsv"
{
	printf 'version\tbuilt\tin_binary\tseeds'
	for c in "${checklist[@]}"; do printf '\t%s' "$c"; done
	printf '\tverdict\tseconds\tnote\n'
} >"$tsv"

echo "bisect-go: $module, scenario $scenario, lock $lock, seeds $seeds; ${#versions[@]} versions (${versions[0]} … ${versions[-1]}), mode $mode; out $out" >&2

declare -A verdict_of

# pin V (in the temporary copy): when the module graph chose another version
# than V (a dependency requires a newer one: redsync v4.18 requires rueidis
# v1.0.77), a replace directive forces V for every importer, so the build has
# V and the rest of the graph stays as it was.
pin() {
	local got
	got=$(go list -m -f '{{.Version}}' "$module")
	if [[ $got != "$1" ]]; then
		echo "bisect-go: replaced $module $got => $1 (a dependency requires $got)"
		go mod edit -replace="$module=$module@$1"
		go mod tidy
	fi
}

# try V: builds and runs one version, appends its line to versions.tsv and
# sets verdict_of[V].
try() {
	local v=$1 start=$SECONDS safe=${1//\//_}
	local bin="$out/$safe.bin" blog="$out/$safe.build.log" rlog="$out/$safe.run.log"
	local built=yes inbin="" note="" verdict="" n=0
	local -A bad
	cp "$work/go.mod.orig" "$work/go.mod"
	cp "$work/go.sum.orig" "$work/go.sum"
	echo "bisect-go: $v: build" >&2
	if [[ -n ${BISECT_GO_FAKE:-} ]]; then
		# Tests of the bisection only: "V=VERDICT ..." stands for each
		# version's build and runs (TestBisectGoLogic).
		verdict=$(tr ' ' '\n' <<<"$BISECT_GO_FAKE" | awk -F= -v v="$v" '$1 == v { gsub(/_/, " ", $2); print $2 }')
		[[ -n $verdict ]] || { echo "bisect-go: BISECT_GO_FAKE has no $v" >&2; exit 1; }
		note=fake
		for c in "${checklist[@]}"; do bad[$c]=0; done
		if [[ $verdict == "does not build" ]]; then built=no; else inbin=$v; fi
	elif ! (cd "$work" && export GOFLAGS=-mod=mod &&
		timeout "$build_timeout" go mod edit -require="$module@$v" &&
		timeout "$build_timeout" go mod tidy &&
		pin "$v" &&
		timeout "$build_timeout" go build -o "$bin" .) >"$blog" 2>&1; then
		built=no verdict="does not build"
		# The first compiler error, else the first line that is not progress.
		note=$( (grep -m1 -E '^[^ ]+\.go:[0-9]+' "$blog" || grep -v -E '^(bisect-go:|go: downloading|go: finding|#)' "$blog" | head -1) |
			tr '\t|' ' /' | cut -c1-200 || true)
		[[ -z $note ]] || ! grep -q '^bisect-go: replaced' "$blog" || note="$note; $(grep -m1 '^bisect-go: replaced' "$blog" | sed 's/^bisect-go: //')"
		[[ -n $note ]] || note="see $(basename "$blog")"
	else
		# The version built in: the dep line's, or its replacement's (=> on the next line).
		inbin=$(go version -m "$bin" | awk -v m="$module" '
			$1 == "dep" && $2 == m { v = $3; want = 1; next }
			want && $1 == "=>" { v = $3 } { want = 0 } END { print v }')
		[[ $inbin == "$v" ]] || note="binary holds ${inbin:-no $module}, not $v"
		if grep -q '^bisect-go: replaced' "$blog"; then
			note="${note:+$note; }$(grep -m1 '^bisect-go: replaced' "$blog" | sed 's/^bisect-go: //')"
		fi
		echo "bisect-go: $v: run seeds $seeds" >&2
		local rc=0
		timeout --kill-after=30s "$run_timeout" "$bin" run "$scenario" --lock "$lock" --seeds "$seeds" \
			--backend "$backend" -q --out "$out/$safe" >"$rlog" 2>&1 || rc=$?
		[[ $rc -ne 124 && $rc -ne 137 ]] || note="${note:+$note; }timed out after $run_timeout"
		local f c v2
		for c in "${checklist[@]}"; do bad[$c]=0; done
		local unknown=0
		for f in "$out/$safe"/seed-*/results.json; do
			[[ -f $f ]] || continue
			n=$((n + 1))
			for c in "${checklist[@]}"; do
				v2=$(jq -r --arg c "$c" '.checks[$c].verdict // "absent"' "$f")
				case $v2 in
				invalid) bad[$c]=$((bad[$c] + 1)) ;;
				valid) ;;
				*) unknown=1 ;;
				esac
			done
		done
		local any=0
		for c in "${checklist[@]}"; do [[ ${bad[$c]} -eq 0 ]] || any=1; done
		if [[ $any -eq 1 ]]; then
			verdict=fails
		elif [[ $n -gt 0 && $unknown -eq 0 ]]; then
			verdict=passes
		else
			verdict=unknown
			[[ $n -gt 0 ]] || note="${note:+$note; }no seed finished (exit $rc, see $(basename "$rlog"))"
		fi
		rm -f "$bin"
	fi
	{
		printf '%s\t%s\t%s\t%s' "$v" "$built" "${inbin:--}" "$n"
		for c in "${checklist[@]}"; do
			if [[ $built == yes ]]; then printf '\t%s/%s' "${bad[$c]}" "$n"; else printf '\t-'; fi
		done
		printf '\t%s\t%s\t%s\n' "$verdict" "$((SECONDS - start))" "$note"
	} >>"$tsv"
	verdict_of[$v]=$verdict
	echo "bisect-go: $v: $verdict ($((SECONDS - start)) s)${note:+: $note}" >&2
}

if [[ $mode == scan ]]; then
	for v in "${versions[@]}"; do try "$v"; done
else
	# The newest, the oldest, then halve the range between a version that
	# fails and one that does not (does not build: the range's end moves past it).
	lo=0 hi=$((${#versions[@]} - 1))
	try "${versions[$hi]}"
	[[ $hi -eq 0 ]] || try "${versions[$lo]}"
	while [[ $lo -lt $hi && ${verdict_of[${versions[$lo]}]} == "does not build" ]]; do
		lo=$((lo + 1))
		[[ -n ${verdict_of[${versions[$lo]}]:-} ]] || try "${versions[$lo]}"
	done
	a=${verdict_of[${versions[$lo]}]} b=${verdict_of[${versions[$hi]}]}
	if [[ ($a == fails || $a == passes) && ($b == fails || $b == passes) && $a != "$b" ]]; then
		while [[ $((hi - lo)) -gt 1 ]]; do
			mid=$(((lo + hi) / 2))
			try "${versions[$mid]}"
			m=${verdict_of[${versions[$mid]}]}
			if [[ $m != fails && $m != passes ]]; then
				echo "bisect-go: ${versions[$mid]} has no verdict ($m): the bisection stops between ${versions[$lo]} and ${versions[$hi]}" >&2
				break
			fi
			if [[ $m == "$a" ]]; then lo=$mid; else hi=$mid; fi
		done
	fi
fi

# The table and the summary, from versions.tsv, oldest first (a bisection
# tries them out of order).
{
	head -1 "$tsv"
	tail -n +2 "$tsv" | sort -t "$(printf '\t')" -k1,1V
} >"$tsv.sorted"
mv "$tsv.sorted" "$tsv"
md="$out/versions.md"
{
	echo "# $lock ($module): $scenario over seeds $seeds"
	echo
	echo "Run by scripts/bisect-go.sh on $(date -u +%Y-%m-%d) ($mode; the run's checks counted: $checks)."
	echo
	awk -F'\t' 'NR == 1 {
		printf "|"; for (i = 1; i <= NF; i++) printf " %s |", $i; printf "\n|"
		for (i = 1; i <= NF; i++) printf "---|"; printf "\n"; next }
		{ printf "|"; for (i = 1; i <= NF; i++) printf " %s |", ($i == "" ? " " : $i); printf "\n" }' "$tsv"
	echo
	# The verdict column is the 5th after the checks: find it by header.
	awk -F'\t' -v newest="${versions[-1]}" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == "verdict") col = i; next }
		{ v[NR] = $1; d[NR] = $col; n = NR }
		END {
			first = ""; last = ""; ok = ""; nb = ""; un = ""
			for (i = 2; i <= n; i++) {
				if (d[i] == "fails") { if (first == "") first = v[i]; last = v[i] }
				else if (d[i] == "passes") ok = ok (ok == "" ? "" : ", ") v[i]
				else if (d[i] == "does not build") nb = nb (nb == "" ? "" : ", ") v[i]
				else un = un (un == "" ? "" : ", ") v[i]
			}
			printf "- earliest version tried that fails: %s\n", (first == "" ? "none" : first)
			printf "- latest version tried that fails: %s\n", (last == "" ? "none" : last)
			printf "- versions tried that do not fail: %s\n", (ok == "" ? "none" : ok)
			if (nb != "") printf "- do not build: %s\n", nb
			if (un != "") printf "- no verdict: %s\n", un
		}' "$tsv"
} >"$md"
cat "$md"
