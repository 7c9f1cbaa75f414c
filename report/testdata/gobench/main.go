// Command gobench parses Go benchmark files with golang.org/x/perf/benchfmt
// and prints what it read as JSON, for report's gobench test. It is a
// module of its own so that the harness's module does not take x/perf's
// requirements (they would raise x/image, x/net and others in the binary).
// The same module pins benchstat (go tool benchstat) for the test.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"golang.org/x/perf/benchfmt"
)

// result is one benchmark line as benchfmt read it.
type result struct {
	File   string             `json:"file"`
	Name   string             `json:"name"`
	Iters  int                `json:"iters"`
	Config map[string]string  `json:"config"`
	Values map[string]float64 `json:"values"` // by the unit as written
}

// output is everything read: results, unit metadata, syntax errors.
type output struct {
	Results []result       `json:"results"`
	Better  map[string]int `json:"better"` // unit → +1 higher, -1 lower
	Errors  []string       `json:"errors"`
}

func main() {
	out := output{Better: map[string]int{}}
	r := benchfmt.NewReader(nil, "")
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		r.Reset(f, path)
		for r.Scan() {
			switch rec := r.Result().(type) {
			case *benchfmt.Result:
				res := result{File: path, Name: string(rec.Name.Full()), Iters: rec.Iters, Config: map[string]string{}, Values: map[string]float64{}}
				for _, c := range rec.Config {
					res.Config[c.Key] = string(c.Value)
				}
				for _, v := range rec.Values {
					u, val := v.Unit, v.Value
					if v.OrigUnit != "" {
						u, val = v.OrigUnit, v.OrigValue
					}
					res.Values[u] = val
				}
				out.Results = append(out.Results, res)
			case *benchfmt.UnitMetadata:
				if rec.Key == "better" {
					out.Better[rec.OrigUnit] = map[string]int{"higher": 1, "lower": -1}[rec.Value]
				}
			case *benchfmt.SyntaxError:
				out.Errors = append(out.Errors, rec.Error())
			}
		}
		if err := r.Err(); err != nil {
			out.Errors = append(out.Errors, err.Error())
		}
		f.Close()
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
