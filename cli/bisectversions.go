package cli

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/lockchaos/lockchaos/campaign"
)

// The released versions bisect's --from/--to reads from the library's
// registry, over HTTPS with nothing installed: npm's registry document,
// PyPI's JSON API, Maven Central's maven-metadata.xml, the Go module
// proxy's @v/list.

// Registries bisect knows, by the name a target carries.
const (
	registryNPM   = "npm"
	registryPyPI  = "pypi"
	registryMaven = "maven"
	registryGo    = "go"
)

// registryBase is each registry's base URL (tests point them at a server
// of their own). The Go proxy's is GOPROXY's first URL when it has one.
var registryBase = map[string]string{
	registryNPM:   "https://registry.npmjs.org/",
	registryPyPI:  "https://pypi.org/pypi/",
	registryMaven: "https://repo1.maven.org/maven2/",
	registryGo:    "https://proxy.golang.org/",
}

// registryNames name the registries in messages.
var registryNames = map[string]string{
	registryNPM: "the npm registry", registryPyPI: "PyPI", registryMaven: "Maven Central", registryGo: "the Go module proxy",
}

// maxBisectVersions bounds a version list (a range of a busy library can
// be hundreds of releases: narrow it, or give --versions).
const maxBisectVersions = 100

// registryURL is where registry lists lib's versions.
func registryURL(registry, lib string) (string, error) {
	base := registryBase[registry]
	switch registry {
	case registryNPM:
		// A scoped package's slash is escaped: @scope%2fname.
		return base + strings.ReplaceAll(url.PathEscape(lib), "%40", "@"), nil
	case registryPyPI:
		return base + url.PathEscape(lib) + "/json", nil
	case registryMaven:
		group, artifact, ok := strings.Cut(lib, ":")
		if !ok || group == "" || artifact == "" {
			return "", fmt.Errorf("%q is not a Maven group:artifact", lib)
		}
		return base + strings.ReplaceAll(group, ".", "/") + "/" + artifact + "/maven-metadata.xml", nil
	case registryGo:
		if p := goProxy(); p != "" {
			base = p
		}
		return strings.TrimRight(base, "/") + "/" + escapeModule(lib) + "/@v/list", nil
	}
	return "", fmt.Errorf("no registry %q", registry)
}

// goProxy is GOPROXY's first URL ("" when it names none: direct, off).
func goProxy() string {
	for _, p := range strings.FieldsFunc(os.Getenv("GOPROXY"), func(r rune) bool { return r == ',' || r == '|' }) {
		if strings.HasPrefix(p, "https://") || strings.HasPrefix(p, "http://") {
			return p
		}
	}
	return ""
}

// escapeModule is a module path as the proxy protocol spells it: each
// upper-case letter as ! and the letter in lower case.
func escapeModule(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// listVersions fetches lib's released versions from registry, oldest
// first.
func listVersions(ctx context.Context, registry, lib string) ([]string, error) {
	u, err := registryURL(registry, lib)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if registry == registryNPM {
		req.Header.Set("Accept", "application/vnd.npm.install-v1+json") // the abbreviated document
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	vs, err := parseVersions(registry, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return campaign.SortVersions(vs), nil
}

// parseVersions reads a registry's answer.
func parseVersions(registry string, body []byte) ([]string, error) {
	var vs []string
	switch registry {
	case registryNPM:
		var doc struct {
			Versions map[string]json.RawMessage `json:"versions"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, err
		}
		for v := range doc.Versions {
			vs = append(vs, v)
		}
	case registryPyPI:
		var doc struct {
			Releases map[string][]struct {
				Yanked bool `json:"yanked"`
			} `json:"releases"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, err
		}
		for v, files := range doc.Releases {
			if servable(files) {
				vs = append(vs, v)
			}
		}
	case registryMaven:
		var doc struct {
			Versions []string `xml:"versioning>versions>version"`
		}
		if err := xml.Unmarshal(body, &doc); err != nil {
			return nil, err
		}
		vs = doc.Versions
	case registryGo:
		vs = strings.Fields(string(body))
	}
	return vs, nil
}

// servable: a PyPI release with a file that is not yanked.
func servable(files []struct {
	Yanked bool `json:"yanked"`
}) bool {
	for _, f := range files {
		if !f.Yanked {
			return true
		}
	}
	return false
}

// bisectVersions is the versions bisect tries: --versions, and the
// registry's releases from --from to --to, oldest first, each once.
func bisectVersions(ctx context.Context, t *bisectTarget, list, from, to string, rangeGiven bool) ([]string, error) {
	var vs []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v != "" {
			vs = append(vs, t.normalize(v))
		}
	}
	if list != "" && len(vs) == 0 {
		return nil, fmt.Errorf("--versions %q: no version in it", list)
	}
	if rangeGiven {
		more, err := registryRange(ctx, t, t.normalize(from), t.normalize(to))
		if err != nil {
			return nil, err
		}
		vs = append(vs, more...)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("--versions or --from/--to: give the versions of %s to try", t.library)
	}
	vs = campaign.SortVersions(vs)
	if len(vs) > maxBisectVersions {
		return nil, fmt.Errorf("--versions/--from/--to: %d versions (%s to %s), more than %d: narrow the range", len(vs), vs[0], vs[len(vs)-1], maxBisectVersions)
	}
	return vs, nil
}

// registryRange is the registry's releases of t's library from from to to.
func registryRange(ctx context.Context, t *bisectTarget, from, to string) ([]string, error) {
	var given []string
	if from != "" {
		given = append(given, "--from "+from)
	}
	if to != "" {
		given = append(given, "--to "+to)
	}
	flag := strings.Join(given, " ")
	if from != "" && to != "" && campaign.CompareVersions(from, to) > 0 {
		return nil, fmt.Errorf("%s: --from is newer than --to", flag)
	}
	if t.registry == "" {
		return nil, fmt.Errorf("%s: lockchaos does not know the registry of lock %s's library %s; give --versions", flag, t.lock, t.library)
	}
	all, err := listVersions(ctx, t.registry, t.library)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot list the versions of %s on %s: %v", flag, t.library, registryNames[t.registry], err)
	}
	vs := campaign.VersionsBetween(all, from, to)
	if len(vs) == 0 {
		known := "none"
		if len(all) > 0 {
			known = all[0] + " to " + all[len(all)-1]
		}
		return nil, fmt.Errorf("%s: %s lists no release of %s in that range (it has %s)", flag, registryNames[t.registry], t.library, known)
	}
	return vs, nil
}
