package campaign

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Released versions as the registries spell them (npm and Maven
// 5.8.0, PyPI 4.0.0rc1 or 3.5.0.post1, the Go proxy v1.0.79 or
// v1.0.14-go1.18), ordered for a bisect: the numeric core first, then a
// pre-release before its release, and any other suffix (-go1.18, .post1)
// after it, as sort -V orders them.

// versionCore splits a version into its numbers (v1.0.14-go1.18: 1 0 14)
// and what follows them (-go1.18).
var versionCore = regexp.MustCompile(`^[vV]?([0-9]+(?:\.[0-9]+)*)(.*)$`)

// preTag marks a pre-release suffix: -beta.2, rc1, a1, .dev3, -SNAPSHOT, -M2.
var preTag = regexp.MustCompile(`(?i)^[-._]?(alpha|beta|rc|pre|preview|dev|snapshot|milestone|cr|a|b|c|m)(?:[-._]?[0-9].*|$|[-._].*)`)

// IsPrerelease says whether v is a pre-release (5.0.0-beta.2, 4.0.0rc1,
// 3.0-M1); a suffix that is not one (v1.0.14-go1.18, 3.5.0.post1) is a
// release.
func IsPrerelease(v string) bool {
	m := versionCore.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return false
	}
	return preTag.MatchString(m[2])
}

// CompareVersions orders two versions: -1 when a is older than b, 1 when
// newer, 0 when they are the same version.
func CompareVersions(a, b string) int {
	ma, mb := versionCore.FindStringSubmatch(strings.TrimSpace(a)), versionCore.FindStringSubmatch(strings.TrimSpace(b))
	if ma == nil || mb == nil {
		return naturalCompare(a, b)
	}
	if c := compareNumbers(strings.Split(ma[1], "."), strings.Split(mb[1], ".")); c != 0 {
		return c
	}
	sa, sb := ma[2], mb[2]
	rank := func(s string) int {
		switch {
		case s == "":
			return 1
		case preTag.MatchString(s):
			return 0
		}
		return 2
	}
	if ra, rb := rank(sa), rank(sb); ra != rb {
		return compareInt(ra, rb)
	}
	return naturalCompare(sa, sb)
}

// compareNumbers compares dotted numbers part by part; a missing part is 0
// (1.0 is 1.0.0).
func compareNumbers(a, b []string) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		x, y := 0, 0
		if i < len(a) {
			x, _ = strconv.Atoi(a[i])
		}
		if i < len(b) {
			y, _ = strconv.Atoi(b[i])
		}
		if x != y {
			return compareInt(x, y)
		}
	}
	return 0
}

func compareInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// digitRuns splits a string into runs of digits and of the rest.
var digitRuns = regexp.MustCompile(`[0-9]+|[^0-9]+`)

// naturalCompare compares strings with their runs of digits as numbers
// (beta.10 after beta.9).
func naturalCompare(a, b string) int {
	pa, pb := digitRuns.FindAllString(a, -1), digitRuns.FindAllString(b, -1)
	for i := 0; i < min(len(pa), len(pb)); i++ {
		x, errx := strconv.Atoi(pa[i])
		y, erry := strconv.Atoi(pb[i])
		if errx == nil && erry == nil {
			if x != y {
				return compareInt(x, y)
			}
			continue
		}
		if c := strings.Compare(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	return compareInt(len(pa), len(pb))
}

// SortVersions returns vs oldest first, each once (blank entries dropped).
func SortVersions(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, CompareVersions)
	return out
}

// VersionsBetween is the versions of all from from to to, both included
// ("" leaves that end open), oldest first. Pre-releases are left out unless
// an end is one (a range of betas asks for betas).
func VersionsBetween(all []string, from, to string) []string {
	pre := IsPrerelease(from) || IsPrerelease(to)
	var out []string
	for _, v := range all {
		switch {
		case IsPrerelease(v) && !pre:
		case from != "" && CompareVersions(v, from) < 0:
		case to != "" && CompareVersions(v, to) > 0:
		default:
			out = append(out, v)
		}
	}
	return SortVersions(out)
}
