// Command apigen generates everything derived from the Go types of a
// module's custom resources, with the Kubernetes ecosystem's own generators
// built in at the versions this module's go.mod pins:
//
//   - deep-copy functions (k8s.io/code-generator deepcopy-gen), beside the types;
//   - apply configurations (applyconfiguration-gen) with the types' OpenAPI
//     schema (k8s.io/kube-openapi openapi-gen) embedded, so that the generated
//     fake clientset's NewClientset and server-side apply work for the types;
//   - the typed clientset and its fake (client-gen), listers (lister-gen) and
//     informers (informer-gen);
//   - the CustomResourceDefinition manifests, from the types and their
//     +kubebuilder markers (sigs.k8s.io/controller-tools, as controller-gen);
//   - optionally a ClusterRole and Roles from the +kubebuilder:rbac markers
//     beside the controllers (also controller-tools).
//
// Add it to a module as a tool and run it from anywhere in the module:
//
//	go get -tool github.com/ctrlkit/ctrlkit/cmd/apigen
//	go tool apigen -crd config/crd -rbac config/rbac -rbac-role my-operator -rbac-paths ./internal/... ./apis
//
// It can run before the module's first go mod tidy: the packages it reads
// for the roles may import the code it has just generated, and it resolves
// their requirements against a copy of go.mod and go.sum, leaving the
// module's own to go mod tidy. (Not in workspace mode or with a vendor
// directory, where the go command refuses such a copy: there, run it
// without -rbac, tidy, and run it again.)
//
// The argument is the directory that holds the API packages as
// <group>/<version> subdirectories (default ./apis). Each API package needs
// "+groupName=<group>" and "+k8s:openapi-gen=true" in its package comment
// (apigen says which is missing), and "+genclient" on each resource type.
// A resource type embeds metav1.TypeMeta and metav1.ObjectMeta, its list
// type metav1.TypeMeta and metav1.ListMeta; the +kubebuilder markers of
// controller-gen shape the CRD (validation, defaults, printer columns,
// subresources).
// Generated Go code goes to -out (default ./generated), replacing what a
// previous run wrote there. With -verify nothing is written: apigen exits
// with status 1 and lists every file that a run would change, add or
// remove.
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command with its arguments; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apigen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	var rbacPaths string
	fs.StringVar(&cfg.out, "out", "generated", "Directory of the generated clientset, listers, informers and apply configurations.")
	fs.StringVar(&cfg.crdDir, "crd", "config/crd", "Directory of the generated CustomResourceDefinition manifests; empty skips them.")
	fs.StringVar(&cfg.rbacDir, "rbac", "", "Directory of the generated role.yaml (ClusterRole and Roles from +kubebuilder:rbac markers); empty skips it.")
	fs.StringVar(&cfg.rbacRole, "rbac-role", "", "Name of the generated ClusterRole and Roles (required with -rbac).")
	fs.StringVar(&rbacPaths, "rbac-paths", "./...", "Space-separated package patterns whose +kubebuilder:rbac markers make the roles.")
	fs.StringVar(&cfg.header, "header", "", "File whose text heads every generated Go file (a license, say); none if empty.")
	fs.BoolVar(&cfg.verify, "verify", false, "Write nothing; exit 1 and list the files a run would change if any is out of date.")
	fs.Usage = func() {
		_, _ = fmt.Fprintln(stderr, "usage: apigen [flags] [API directory, default ./apis]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch fs.NArg() {
	case 0:
		cfg.apis = "apis"
	case 1:
		cfg.apis = fs.Arg(0)
	default:
		_, _ = fmt.Fprintf(stderr, "apigen: one API directory expected, got %q\n", fs.Args())
		return 2
	}
	cfg.rbacPaths = strings.Fields(rbacPaths)
	if cfg.rbacDir != "" && cfg.rbacRole == "" {
		_, _ = fmt.Fprintln(stderr, "apigen: -rbac needs -rbac-role")
		return 2
	}
	err := generateAll(ctx, cfg, stdout)
	var stale *staleError
	switch {
	case errors.As(err, &stale):
		_, _ = fmt.Fprintln(stderr, err)
		return 1
	case err != nil:
		_, _ = fmt.Fprintf(stderr, "apigen: %v\n", err)
		return 1
	}
	return 0
}
