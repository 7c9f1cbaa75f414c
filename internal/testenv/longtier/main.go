// Command longtier reads `go test -json` of the default tier on stdin,
// prints what `go test` prints without -v (each package's line, and the
// whole output of a test that failed), and writes to the file named by its
// argument a -run pattern of the tests that skipped for the long tier
// (testenv.Long: "long tier: LOCKCHAOS_LONG=1 runs it"), so scripts/test.sh
// runs exactly those with LOCKCHAOS_LONG=1. It exits 1 when a package or a
// test failed, 0 otherwise.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

type event struct {
	Action, Package, Test, Output string
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ./... | longtier PATTERN-FILE")
		os.Exit(2)
	}
	failed := false
	long := map[string]bool{}
	out := map[string][]string{} // package/test → its output so far
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Println(sc.Text()) // a build error, printed as it came
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" {
				// The package's own lines: ok/FAIL/?, build errors, panics.
				if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "--- ") && e.Output != "PASS\n" && e.Output != "FAIL\n" {
					fmt.Print(e.Output)
				}
				continue
			}
			out[key] = append(out[key], e.Output)
			if strings.Contains(e.Output, "long tier: LOCKCHAOS_LONG=1 runs it") {
				top, _, _ := strings.Cut(e.Test, "/")
				long[top] = true
			}
		case "fail":
			failed = true
			if e.Test != "" {
				fmt.Print(strings.Join(out[key], ""))
			}
			delete(out, key)
		case "pass", "skip":
			delete(out, key)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "longtier:", err)
		os.Exit(2)
	}
	names := make([]string, 0, len(long))
	for n := range long {
		names = append(names, regexp.QuoteMeta(n))
	}
	slices.Sort(names)
	pattern := "^(" + strings.Join(names, "|") + ")$"
	if len(names) == 0 {
		pattern = "^$" // no long test: run none
	}
	if err := os.WriteFile(os.Args[1], []byte(pattern+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "longtier:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}
