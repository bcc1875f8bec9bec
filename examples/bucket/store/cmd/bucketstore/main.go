// Command bucketstore runs the bucket store of examples/bucket (package
// github.com/ctrlkit/ctrlkit/examples/bucket/store) as a process of its own,
// so that it can be stopped, killed and started again like the cloud
// storage service it stands in for.
//
//	go run ./examples/bucket/store/cmd/bucketstore --data /tmp/buckets.json
//
// Once it accepts connections it prints one line to stdout,
//
//	listening on http://HOST:PORT
//
// (with the port it was given, when --listen asks for port 0). On SIGTERM or
// SIGINT it wakes the pending long polls, waits a few seconds at most for
// the requests under way, and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
)

// shutdownTimeout bounds the wait for the requests under way at shutdown.
const shutdownTimeout = 5 * time.Second

// handler returns the handler run serves, the store itself; tests wrap it to
// see the requests arrive.
var handler = func(srv *store.Server) http.Handler { return srv }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		os.Exit(2) // the flag set has told why
	default:
		fmt.Fprintln(os.Stderr, "bucketstore:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line, which the flag set has reported.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// run serves the store as args ask until ctx is done, then shuts down. It
// writes the listening line to stdout, and returns nil after a clean
// shutdown, a usageError for bad args, or why it could not serve.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bucketstore", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8090", "Address to listen on, host:port; port 0 takes a free port.")
	dataFile := fs.String("data", "", "File keeping the buckets (required); created at the first change, in a directory that exists.")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *dataFile == "" || fs.NArg() > 0 {
		err := errors.New("--data is required, and there are no arguments")
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return usageError{err}
	}

	srv, err := store.NewServer(*dataFile)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", *listen, err)
	}
	hs := &http.Server{Handler: handler(srv), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if _, err := fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr()); err != nil {
		_ = hs.Close()
		<-served
		return fmt.Errorf("writing the listening line: %w", err)
	}

	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	srv.Close() // long polls answer at once, so Shutdown does not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = hs.Shutdown(sctx)
	if err != nil {
		_ = hs.Close()
	}
	<-served
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
