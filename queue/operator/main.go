package operator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Main is the whole of an operator's main function after its flags are
// registered on fs (with Bind and the operator's own): it parses args,
// checks the flags (Validate, then validate if not nil), and runs run with a
// context that the first SIGINT or SIGTERM cancels (a second one exits the
// process at once, with status 1) and a logger named after fs. Errors go to
// stderr as "name: error". With --version it prints BuildVersion to
// standard output instead and returns 0, before checking the flags or
// calling run. Before run it sets the Go runtime's memory limit that
// --memory-limit decides (see Flags.MemoryLimit). It returns the exit status: 0 (also for -h and --version), 1
// if run failed, 2 for bad flags:
//
//	os.Exit(flags.Main(fs, os.Args[1:], os.Stderr, run, nil))
func (f *Flags) Main(fs *flag.FlagSet, args []string, stderr io.Writer, run func(ctx context.Context) error, validate func() error) int {
	defer klog.Flush()
	name := fs.Name()
	fs.SetOutput(stderr)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if f.Version {
		fmt.Fprint(stdout, BuildVersion())
		return 0
	}
	err := f.Validate()
	if validate != nil {
		err = errors.Join(err, validate())
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	logger := klog.Background().WithName(name)
	if msg, err := setMemoryLimit(f.MemoryLimit); err == nil {
		logger.Info(msg)
	}
	ctx, stop := signalContext(context.Background(), stderr, name)
	defer stop()
	if err := run(klog.NewContext(ctx, logger)); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// exit ends the process; a variable so that tests can see the second
// signal's exit.
var exit = os.Exit

// stdout is where --version prints; a variable so that tests can read it.
var stdout io.Writer = os.Stdout

// signalContext returns a context cancelled by the first SIGINT or SIGTERM;
// a second signal exits the process with status 1 without waiting for a
// graceful shutdown.
func signalContext(parent context.Context, stderr io.Writer, name string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case sig := <-sigs:
			klog.Background().Info("Shutting down gracefully; send the signal again to exit at once", "signal", sig.String())
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintf(stderr, "%s: second signal, exiting now\n", name)
			klog.Flush()
			exit(1)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		<-finished
		cancel()
	}
}

// ErrNotServed is wrapped by the error of CheckServed for a group version
// the API server does not serve.
var ErrNotServed = errors.New("not served")

// CheckTimeout bounds each request of CheckServed.
const CheckTimeout = 15 * time.Second

// CheckServed fails fast, with a message that says what is wrong, when the
// API server of cfg cannot be reached, refuses the credentials, or does not
// serve one of gvs (for a custom resource: its CustomResourceDefinition is
// not installed; the error then wraps ErrNotServed). Each request waits at
// most CheckTimeout.
func CheckServed(cfg *rest.Config, gvs ...schema.GroupVersion) error {
	check := rest.CopyConfig(cfg)
	check.Timeout = CheckTimeout
	client, err := discovery.NewDiscoveryClientForConfig(check)
	if err != nil {
		return fmt.Errorf("building the discovery client: %w", err)
	}
	for _, gv := range gvs {
		_, err := client.ServerResourcesForGroupVersion(gv.String())
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			return fmt.Errorf("the API server at %s does not serve %s (is its CustomResourceDefinition installed?): %w", cfg.Host, gv, ErrNotServed)
		case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
			return fmt.Errorf("the API server at %s refused the credentials: %w", cfg.Host, err)
		default:
			return fmt.Errorf("cannot reach the API server at %s: %w", cfg.Host, err)
		}
	}
	return nil
}
