// Command harvey is a terminal coding agent. See README.md.
package main

import (
	"context"
	"os"

	"github.com/harvey-agent/harvey"
	"github.com/harvey-agent/harvey/internal/guardian"
	_ "github.com/harvey-agent/harvey/internal/launch" // the sandbox's launcher starts before the rest initialises
)

func main() {
	// The harvey a shell starts keeps the session's end, however it ends
	// (internal/guardian); the session is its child.
	if code, ok := guardian.Main(); ok {
		os.Exit(code)
	}
	os.Exit(harvey.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
