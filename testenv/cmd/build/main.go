// Command build builds the control-plane binaries and kubectl that are
// missing from the cache directory (see package binaries) and prints progress
// as it goes. Any module that requires github.com/ctrlkit/ctrlkit/testenv
// can run it:
//
//	go run github.com/ctrlkit/ctrlkit/testenv/cmd/build
//
// The first run on a machine compiles Kubernetes from the Go module proxy and
// takes 8 to 11 minutes on 2 cores; later runs, from any clone or module,
// return at once.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ctrlkit/ctrlkit/testenv/binaries"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	set, err := binaries.Ensure(ctx, binaries.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "all binaries ready in %s (kubectl: %s)\n", time.Since(start).Round(time.Second), set.Kubectl)
}
