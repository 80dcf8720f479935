// Command harvey is a terminal coding agent. See README.md.
package main

import (
	"context"
	"os"

	"github.com/harvey-agent/harvey"
	_ "github.com/harvey-agent/harvey/internal/launch" // the sandbox's launcher starts before the rest initialises
)

func main() {
	os.Exit(harvey.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
