// Command lockchaos-driver is a driver (docs/driver-protocol.md) for
// lockchaos's built-in locks: `lockchaos-driver simple` serves the simple
// lock over JSON lines on stdin and stdout, so
// `lockchaos run smoke --lock "exec:lockchaos-driver simple"` runs the
// built-in through the protocol (its lock is named go-simple).
package main

import (
	"fmt"
	"os"

	"github.com/lockchaos/lockchaos/lockimpl"
	_ "github.com/lockchaos/lockchaos/lockimpl/adapters"
	"github.com/lockchaos/lockchaos/lockimpl/driver/godriver"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: lockchaos-driver <lock>  (one of %v)\n", lockimpl.Names())
		os.Exit(2)
	}
	if err := godriver.Serve(os.Args[1], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos-driver:", err)
		os.Exit(1)
	}
}
