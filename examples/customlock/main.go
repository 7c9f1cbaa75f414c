// Command customlock is lockchaos with one more lock (the xk6 pattern): every
// command (run, matrix, bench, report, compare, list), and seq-lock in
// `customlock list locks`.
package main

import (
	"os"

	"github.com/lockchaos/lockchaos/cli"

	_ "example.com/customlock/seqlock" // registers seq-lock in its init
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
