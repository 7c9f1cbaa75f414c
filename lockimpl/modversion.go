package lockimpl

import "runtime/debug"

// UnknownVersion is the version of a module the binary's build info does
// not list (a `go test` binary lists no dependencies; a binary built
// without module support lists none either).
const UnknownVersion = "(unknown)"

// ModuleVersion is the version of Go module path as built into this binary
// (runtime/debug.ReadBuildInfo), so a label says what runs: a build against
// another release (scripts/bisect-go.sh's `go mod edit -require`, or its
// replace directive) is labelled with that release, never with the one a
// source file names. UnknownVersion when the build info does not say.
func ModuleVersion(path string) string {
	bi, _ := debug.ReadBuildInfo()
	return ModuleVersionIn(bi, path)
}

// ModuleVersionIn reads path's version from bi (nil: UnknownVersion). A
// replaced module is labelled with its replacement: the replacement's
// version, and its path when it is another module ("v1.0.69 (replaced by
// example.com/fork)"); a directory replacement has no version and says so
// ("(replaced by ../rueidis)").
func ModuleVersionIn(bi *debug.BuildInfo, path string) string {
	if bi == nil {
		return UnknownVersion
	}
	for _, d := range bi.Deps {
		if d.Path != path {
			continue
		}
		r := d.Replace
		switch {
		case r == nil:
			if d.Version == "" {
				return UnknownVersion
			}
			return d.Version
		case r.Version == "":
			return "(replaced by " + r.Path + ")"
		case r.Path != path:
			return r.Version + " (replaced by " + r.Path + ")"
		}
		return r.Version
	}
	return UnknownVersion
}

// Library is an adapter's module and the version built into this binary
// ("github.com/redis/rueidis v1.0.69"), or "" for a lock without a Module.
func (i Info) Library() string {
	if i.Module == "" {
		return ""
	}
	return i.Module + " " + ModuleVersion(i.Module)
}
