// Command harvey is a terminal coding agent. See README.md.
package main

import (
	"context"
	"os"

	"github.com/harvey-agent/harvey"
)

func main() {
	os.Exit(harvey.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
