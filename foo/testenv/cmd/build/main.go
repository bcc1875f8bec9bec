// Command build builds the control-plane binaries that are missing from the
// cache directory (see package binaries) and prints progress as it goes.
// Run it from foo/testenv:
//
//	go run ./cmd/build
//
// The first run compiles Kubernetes from the Go module proxy and takes many
// minutes; later runs return at once.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ctrlkit/ctrlkit/foo/testenv/binaries"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	set, err := binaries.Ensure(ctx, binaries.Options{Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "all binaries ready in %s (%s)\n", time.Since(start).Round(time.Second), filepath.Dir(set.KubeAPIServer))
}
