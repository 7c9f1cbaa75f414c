// Package browser opens a page of ours (report.html, card.html) in
// headless Chromium (Debian's package) and says what a person would see
// go wrong: a plot that is not drawn, an error on the console, a resource
// fetched from elsewhere. It is for tests: it needs nothing but the
// chromium binary and talks to no network (the page is a file).
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// Find is the Chromium binary on PATH, "" when there is none.
func Find() string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Image is one <img> as the browser decoded it.
type Image struct {
	Alt          string `json:"alt"`
	Src          string `json:"src"` // cut to 60 characters
	NaturalWidth int    `json:"w"`
	Complete     bool   `json:"complete"`
}

// Result is what the page did in the browser.
type Result struct {
	Images []Image
	// Console holds the console errors: console.error calls, uncaught
	// exceptions, resources that failed to load (from the page's probe and
	// Chromium's log).
	Console []string
	// Remote lists every URL the page refers to (src, href, url()) or
	// fetched that is neither a file, a data: URI, a fragment, a relative
	// path, nor loopback.
	Remote []string
	// Screenshot is the PNG taken of the page.
	Screenshot string
	// Cells are the computed background colours ("rgb(r, g, b)") of the
	// page's elements with a data-cell attribute, by its value.
	Cells map[string]string
}

// Problems are the result's failures, each a sentence ("" none): a plot
// not drawn, a console error, a remote resource.
func (r *Result) Problems() []string {
	var out []string
	if len(r.Images) == 0 {
		out = append(out, "the page has no image")
	}
	for _, im := range r.Images {
		if !im.Complete || im.NaturalWidth <= 0 {
			out = append(out, fmt.Sprintf("image %q (%s) is not drawn: naturalWidth %d", im.Alt, im.Src, im.NaturalWidth))
		}
	}
	for _, c := range r.Console {
		out = append(out, "console error: "+c)
	}
	for _, u := range r.Remote {
		out = append(out, "remote resource: "+u)
	}
	return out
}

// probe is put into a copy of the page: it records console errors and
// failed loads as they happen, and on load writes every image's decoded
// width and every fetched resource into a <pre id="lc-probe"> for
// --dump-dom to show.
const probe = `<script>(function(){var errs=[];window.__lcErrs=errs;
var ce=console.error;console.error=function(){errs.push(Array.prototype.join.call(arguments," "));return ce.apply(console,arguments)};
window.addEventListener("error",function(e){var t=e.target;errs.push(t&&t!==window&&(t.src||t.href)?"failed to load "+String(t.src||t.href).slice(0,60):String(e.message))},true);
window.addEventListener("unhandledrejection",function(e){errs.push("unhandled rejection: "+e.reason)});
window.addEventListener("load",function(){var imgs=Array.prototype.map.call(document.images,function(i){return {alt:i.alt,src:String(i.getAttribute("src")||"").slice(0,60),w:i.naturalWidth,complete:i.complete}});
var res=performance.getEntriesByType("resource").map(function(r){return r.name});
var cells={};Array.prototype.forEach.call(document.querySelectorAll("[data-cell]"),function(e){cells[e.getAttribute("data-cell")]=getComputedStyle(e).backgroundColor});
var p=document.createElement("pre");p.id="lc-probe";p.style.display="none";p.textContent=JSON.stringify({imgs:imgs,errs:errs,res:res,cells:cells});document.body.appendChild(p)})})();</script>`

var probeRE = regexp.MustCompile(`(?s)<pre id="lc-probe"[^>]*>(.*?)</pre>`)

// Open loads page (a file) in Chromium with bin, writes its screenshot to
// shot, and returns what it found. work is a scratch directory (the
// profile and the probed copy of the page go there).
func Open(ctx context.Context, bin, page, shot, work string) (*Result, error) {
	src, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	r := &Result{Remote: remoteRefs(src)}
	// The probed copy lies beside the page, so that its relative links
	// mean the same.
	probed := filepath.Join(filepath.Dir(page), ".probe-"+filepath.Base(page))
	body := string(src)
	if i := strings.Index(strings.ToLower(body), "<head>"); i >= 0 {
		body = body[:i+6] + probe + body[i+6:]
	} else {
		body = probe + body
	}
	if err := os.WriteFile(probed, []byte(body), 0o644); err != nil {
		return nil, err
	}
	defer os.Remove(probed)
	abs, err := filepath.Abs(probed)
	if err != nil {
		return nil, err
	}
	dom, logs, err := run(ctx, bin, work, "--dump-dom", "file://"+abs)
	if err != nil {
		return nil, err
	}
	m := probeRE.FindStringSubmatch(dom)
	if m == nil {
		return nil, fmt.Errorf("chromium: the page's probe did not report (the load event never came?); log:\n%s", tail(logs))
	}
	var p struct {
		Imgs  []Image           `json:"imgs"`
		Errs  []string          `json:"errs"`
		Res   []string          `json:"res"`
		Cells map[string]string `json:"cells"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &p); err != nil {
		return nil, fmt.Errorf("chromium: probe: %w", err)
	}
	r.Images, r.Console, r.Cells = p.Imgs, p.Errs, p.Cells
	for _, u := range p.Res {
		if remote(u) {
			r.Remote = append(r.Remote, u)
		}
	}
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "Uncaught") || strings.Contains(l, "ERROR:CONSOLE") {
			r.Console = append(r.Console, strings.TrimSpace(l))
		}
	}
	pageAbs, err := filepath.Abs(page)
	if err != nil {
		return nil, err
	}
	shotAbs, err := filepath.Abs(shot)
	if err != nil {
		return nil, err
	}
	if _, _, err := run(ctx, bin, work, "--screenshot="+shotAbs, "--window-size=1280,2000", "--hide-scrollbars", "file://"+pageAbs); err != nil {
		return nil, err
	}
	if st, err := os.Stat(shotAbs); err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("chromium: no screenshot at %s", shotAbs)
	}
	r.Screenshot = shotAbs
	return r, nil
}

// run starts Chromium headless, with no network beyond the page, for at
// most a minute; it returns its stdout and its log.
func run(ctx context.Context, bin, work string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	prof, err := os.MkdirTemp(work, "profile-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(prof)
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir=" + prof, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return "", logs.String(), fmt.Errorf("chromium %s: %w\n%s", args[0], err, tail(logs.String()))
	}
	return out.String(), logs.String(), nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

var cssURL = regexp.MustCompile(`url\(\s*['"]?([^'")\s]+)`)

// remoteRefs are the page's references to other hosts: attributes that
// load or link (src, href, srcset, data, poster, action) and CSS url().
func remoteRefs(src []byte) []string {
	var out []string
	z := html.NewTokenizer(bytes.NewReader(src))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		for _, a := range tok.Attr {
			switch a.Key {
			case "src", "href", "data", "poster", "action", "srcset":
				for _, u := range strings.Fields(a.Val) {
					if remote(u) {
						out = append(out, tok.Data+" "+a.Key+"="+u)
					}
				}
			case "style":
				for _, m := range cssURL.FindAllStringSubmatch(a.Val, -1) {
					if remote(m[1]) {
						out = append(out, tok.Data+" style url("+m[1]+")")
					}
				}
			}
		}
	}
	for _, m := range cssURL.FindAllSubmatch(src, -1) {
		if u := string(m[1]); remote(u) {
			out = append(out, "url("+u+")")
		}
	}
	return out
}

// remote: a URL that leaves this machine (http, https, ws or a
// protocol-relative //host) other than loopback.
func remote(u string) bool {
	l := strings.ToLower(u)
	for _, p := range []string{"http://", "https://", "ws://", "wss://", "//"} {
		if strings.HasPrefix(l, p) {
			host := strings.TrimPrefix(l, p)
			for _, local := range []string{"127.0.0.1", "localhost", "[::1]"} {
				if host == local || strings.HasPrefix(host, local+":") || strings.HasPrefix(host, local+"/") {
					return false
				}
			}
			return true
		}
	}
	return false
}
