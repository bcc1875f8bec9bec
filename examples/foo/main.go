// Command foo runs the Foo -> Deployment controller (package
// github.com/ctrlkit/ctrlkit/foo) against a cluster.
//
//	go run ./examples/foo --kubeconfig ~/.kube/config
//
// See README.md beside this file for the flags, the manifests and how to
// embed the controller in another binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses args, runs the controller until SIGINT or SIGTERM, and returns
// the process exit code. A second signal exits at once.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("foo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := bindFlags(fs)
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintf(stderr, "foo: %v\n", err)
		return 2
	}
	defer klog.Flush()

	ctx, stop := signalContext(context.Background(), stderr)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("foo"))

	if err := opts.runController(ctx); err != nil {
		fmt.Fprintf(stderr, "foo: %v\n", err)
		return 1
	}
	return 0
}

// signalContext returns a context cancelled by the first SIGINT or SIGTERM;
// a second signal exits the process with status 1 without waiting for a
// graceful shutdown.
func signalContext(parent context.Context, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			klog.Background().Info("Shutting down gracefully; send the signal again to exit at once", "signal", sig.String())
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "foo: second signal, exiting now")
			klog.Flush()
			os.Exit(1)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
