// Command image builds reproducible OCI images of Go main packages without
// a container daemon: for each argument DIR=IMAGE it compiles the main
// package in DIR into a static linux binary and builds the image IMAGE
// from scratch around it (see package
// github.com/ctrlkit/ctrlkit/cmd/internal/image for what the
// image holds). It writes OUTPUT/NAME/, an OCI image layout, and
// OUTPUT/NAME.tar, a tarball for docker load, podman load and kind load
// image-archive, where NAME is the last element of IMAGE's repository,
// and prints one line per image on standard output:
//
//	IMAGE sha256:DIGEST
//
// with the digest of the image manifest. From a checkout of ctrlkit,
// `make image` builds the example operators; from any module:
//
//	go run github.com/ctrlkit/ctrlkit/cmd/image@VERSION -output _output/images ./cmd/my-operator=example.com/my-operator:dev
//
// or, with the version pinned in the module's go.mod as a tool:
//
//	go get -tool github.com/ctrlkit/ctrlkit/cmd/image@VERSION
//	go tool image ./cmd/my-operator=example.com/my-operator:dev
//
// Flags: -output (default _output/images), -arch (GOARCH, default
// amd64), -go (the go command), -label KEY=VALUE (repeatable). Every file
// in the image, and the image's created time, get the time of
// SOURCE_DATE_EPOCH (seconds since 1970), or 1970-01-01 when it is not set.
// The exit status is 0 when every image was written, 1 when one failed, 2
// for bad arguments.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ctrlkit/ctrlkit/cmd/internal/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// labels is a repeatable KEY=VALUE flag.
type labels map[string]string

func (l labels) String() string { return fmt.Sprint(map[string]string(l)) }

func (l labels) Set(v string) error {
	key, value, ok := strings.Cut(v, "=")
	if !ok || key == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	l[key] = value
	return nil
}

// run builds the images of args and returns the exit status. getenv reads
// SOURCE_DATE_EPOCH.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: image [flags] DIR=IMAGE...")
		fmt.Fprintln(stderr, "Builds the main package in each DIR into a reproducible image named IMAGE (such as ./cmd/op=example.com/op:dev).")
		fs.PrintDefaults()
	}
	opts := image.Options{Labels: labels{}, BuildOutput: stderr}
	out := fs.String("output", "_output/images", "Directory of the OCI image layouts (NAME/) and tarballs (NAME.tar).")
	fs.StringVar(&opts.Arch, "arch", image.DefaultArch, "GOARCH of the binaries and architecture of the images.")
	fs.StringVar(&opts.Go, "go", "go", "The go command that builds the binaries.")
	fs.Var(labels(opts.Labels), "label", "KEY=VALUE label of every image, over those from the build information; repeatable.")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	specs, err := parseSpecs(fs.Args())
	if err == nil {
		opts.Time, err = image.SourceDateEpoch(getenv("SOURCE_DATE_EPOCH"))
	}
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 2
	}
	for _, spec := range specs {
		res, err := image.Build(ctx, spec, *out, opts)
		if err != nil {
			fmt.Fprintf(stderr, "image: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s %s\n", spec.Ref, res.Digest)
	}
	return 0
}

// parseSpecs parses the DIR=IMAGE arguments.
func parseSpecs(args []string) ([]image.Spec, error) {
	if len(args) == 0 {
		return nil, errors.New("no DIR=IMAGE argument given")
	}
	specs := make([]image.Spec, 0, len(args))
	names := map[string]string{} // output name -> argument
	for _, arg := range args {
		dir, ref, ok := strings.Cut(arg, "=")
		if !ok || dir == "" || ref == "" {
			return nil, fmt.Errorf("argument %q: want DIR=IMAGE, such as ./cmd/op=example.com/op:dev", arg)
		}
		tag, err := image.ParseRef(ref)
		if err != nil {
			return nil, fmt.Errorf("argument %q: %w", arg, err)
		}
		if other, ok := names[image.Name(tag)]; ok {
			return nil, fmt.Errorf("arguments %q and %q would both write %s", other, arg, image.Name(tag))
		}
		names[image.Name(tag)] = arg
		specs = append(specs, image.Spec{Dir: dir, Ref: ref})
	}
	return specs, nil
}
