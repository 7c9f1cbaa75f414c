// Command lockchaos-testlocks is lockchaos with the test locks
// (testlocks.Register): `go build -o /tmp/lc ./internal/testlocks/cmd/lockchaos-testlocks`
// then `/tmp/lc run FILE --lock poll-renew`, or explore with it.
package main

import (
	"os"

	"github.com/lockchaos/lockchaos/cli"
	"github.com/lockchaos/lockchaos/internal/testlocks"
)

func main() {
	testlocks.Register()
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
