// Command lockchaos tells whether a Redis distributed lock is safe and how
// fast it is: it drives lock implementations with contention workloads while
// faults hit clients, servers, network and clocks, checks the recorded
// history and reports. See README.md.
package main

import (
	"os"

	"github.com/lockchaos/lockchaos/cli"

	// Built-in lock implementations register themselves.
	_ "github.com/lockchaos/lockchaos/lockimpl"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
