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
//     beside the controllers (also controller-tools), and from those of
//     the library's packages the controllers import (informer/optional's
//     read of CustomResourceDefinitions), which the operator does not
//     repeat;
//   - optionally the manifests of the operator's webhooks (-webhook): the
//     mutating and validating configurations from the +kubebuilder:webhook
//     and +kubebuilder:webhookconfiguration markers (controller-tools), the
//     Service they call, and, from +ctrlkit:conversionwebhook markers, a
//     kustomize patch that makes a CRD's conversion a webhook (a marker
//     without a Service name calls <-rbac-role>-webhooks, one without a
//     Service namespace calls the Service in -deploy-namespace,
//     and configurations without a name are named after the operator;
//     what is generated is checked to agree, and refused if it does not); with them,
//     zz_generated.webhooks.go in the markers' package: a constant for each
//     path, and the certificate's hosts and the objects that get its CA,
//     for operator.Flags (see docs/webhooks.md);
//   - optionally the rest of the operator's deploy manifests (-deploy, with
//     -rbac in the same run): its namespace (only its own: those of its
//     Roles must exist) and ServiceAccount, bindings to the generated roles
//     (none without +kubebuilder:rbac markers, as for an operator that
//     only serves webhooks) and roles of what the Deployment makes it do,
//     its Deployment (-deploy-image), and a
//     kustomization that lists them with the CRDs, roles and webhooks, and
//     the user's patches in the patches directory beside it (see
//     docs/new-api.md); an overlay of it may set another namespace,
//     labels, annotations, images and patches, but not, with webhooks, a
//     namePrefix or nameSuffix, which renames the Service and the
//     configurations but not the certificate's host and the CA's targets
//     (see docs/webhooks.md).
//
// Add it to a module as a tool and run it from anywhere in the module:
//
//	go get -tool github.com/ctrlkit/ctrlkit/cmd/apigen
//	go tool apigen -crd config/crd -rbac config/rbac -rbac-role my-operator -rbac-paths ./internal/... ./apis
//
// It can run before the module's first go mod tidy: the packages it reads
// for the roles may import the code it has just generated, and it resolves
// their requirements against a copy of go.mod and go.sum, leaving the
// module's own to go mod tidy. (Not with a vendor directory, where the go
// command refuses such a copy: there, run it without -rbac, tidy, and run
// it again.) In workspace mode, the packages are loaded and the OpenAPI
// schema is built with the workspace's requirements, or, only if those
// provide no module for one of their imports, outside the workspace
// (GOWORK=off) against copies of the module's, with a line on stderr
// that names the import; other errors are reported as they are.
// Package patterns that end in "..." (-rbac-paths, -webhook-paths) match
// the directories of the module on disk, without the generated client
// packages.
//
// The argument is the directory that holds the API packages as
// <group>/<version> subdirectories (default ./apis). Each API package needs
// "+groupName=<group>" and "+k8s:openapi-gen=true" in its package comment
// (apigen says which is missing), and "+genclient" on each resource type.
// A resource type embeds metav1.TypeMeta and metav1.ObjectMeta, its list
// type metav1.TypeMeta and metav1.ListMeta; the +kubebuilder markers of
// controller-gen shape the CRD (validation, defaults, printer columns,
// subresources). The resource a type's CRD serves and the one its
// generated client requests must be the same: controller-gen and
// client-gen pluralize kinds differently (Quiz, Person, Analysis), and
// apigen refuses a run where they differ, asking for the type's
// "+kubebuilder:resource:path=<plural>" and "+resourceName=<plural>".
// Generated Go code goes to -out (default ./generated). Deep copies are
// generated for every package in or under the API directory whose Go
// files ask for them with "+k8s:deepcopy-gen" (shared types the API
// packages import, say), with the OpenAPI definitions of those that have
// "+k8s:openapi-gen=true". The OpenAPI schema also holds the definitions
// of the packages of other modules the API packages import whose package
// comment has "+k8s:openapi-gen=true" (github.com/ctrlkit/ctrlkit/queue/multicluster/fleetv1,
// say); their types need deep copies of their own (DeepCopyInto).
//
// apigen owns only the files it generated, told apart as the upstream
// generators' are:
//
//   - the Go files that carry the line "// Code generated ... DO NOT
//     EDIT." above their package clause: zz_generated.deepcopy.go in the
//     packages under the API directory whose deep copies the run makes,
//     those whose Go files ask for them with "+k8s:deepcopy-gen" (one in
//     a package that does not, an API package whose deep copies
//     controller-gen makes say, is another generator's and stays),
//     zz_generated.register.go in its API packages, and every .go file
//     under the applyconfiguration, clientset, listers and informers
//     directories of -out;
//   - zz_generated.webhooks.go in the directories of -webhook-paths that
//     carries that line;
//   - the CRDs directly in -crd that begin with the line "# Code
//     generated by apigen from <API directory>. DO NOT EDIT." naming the
//     run's API directory (relative to the module root), or with a "---"
//     line and that line, so that runs from other API directories and
//     other files may share -crd; and the CRDs of the run's API groups
//     there that begin with the line of earlier versions, below;
//   - role.yaml in -rbac, and
//     webhook.yaml and crd-conversion.yaml in -webhook, and
//     kustomization.yaml, namespace.yaml, serviceaccount.yaml, rbac.yaml
//     and deployment.yaml in -deploy, that begin
//     with the line "# Code generated by apigen. DO NOT EDIT.", or with a
//     "---" line and that line (as apigen writes them). A CRD or
//     role.yaml that an earlier apigen wrote without that line (a CRD with
//     controller-gen's version annotation, a role.yaml that begins as
//     controller-gen's ClusterRole or Role of the -rbac-role name) is
//     taken as its own when a run writes a file of that name; a CRD
//     without a marker that no run writes again stays (controller-gen
//     writes the same file: apigen cannot tell that it wrote it).
//
// A run replaces and removes those files and no other: hand-written files
// beside them stay as they are, and a run that would write a file where
// one of them is fails. A <type>_expansion.go in a typed client or lister
// directory is how client-gen and lister-gen let a user add methods: the
// type then gets no empty expansion interface in the generated
// generated_expansion.go or expansion_generated.go. Docs, a
// kustomization.yaml, a CRD or role apigen did not write stay too. Client
// directories that end up empty are removed.
//
// A run generates everything into a temporary directory outside the module
// before it changes anything there: the program that prints the OpenAPI
// schema, which needs the generated code, is built from the go command's
// -overlay, in a directory that exists only there. Then it puts the files
// in place one after the other: each new or changed file is written to a
// hidden ".<name>.apigen-tmp" beside it and renamed over it, unchanged
// files are not touched, and the owned files not generated again are
// removed last. So a run that fails, or is stopped or killed before that
// step, leaves the module as it was. SIGINT and SIGTERM stop a run
// promptly at any step and remove its temporary files, the staging
// directory and the hidden file being written, if any. A run stopped or
// killed while it puts the files in place leaves each owned file whole,
// either as it was or as generated, but possibly a mix of old and new
// files (those renamed so far are new; the stale ones are removed only
// after all are renamed): run apigen again. A SIGKILL there may also leave
// one hidden temporary file, which the go command ignores and the next run
// removes, and at any step the staging directory outside the module.
//
// "apigen init -name NAME [-api GROUP/VERSION/KIND [-namespaced=false]
// [-webhooks]]" starts a new operator in the module instead: it writes
// main.go, controller.go, controller_test.go, generate.go, with -api the
// API package (of a namespaced kind, or with -namespaced=false a
// cluster-scoped one, whose controller and test use no namespace) and with
// -webhooks (and -api) webhooks.go, a validating webhook of the kind, then
// generates as generate.go's go:generate line says and runs go mod tidy
// (see docs/new-api.md). It refuses, writing nothing, if any of those
// files or of the manifests it generates by name (the deploy manifests,
// role.yaml, the API's CRD, with -webhooks webhook.yaml and
// zz_generated.webhooks.go) exists, and an init that fails at a later
// step (or is stopped by SIGINT or SIGTERM) undoes what it wrote: it
// writes back the files it replaced or removed (the generated code of
// API packages already in the module, say), then removes the files and
// directories it created.
//
// "apigen create webhook -kind KIND [-group GROUP] [-defaulting]
// [-validation] [-conversion]" and "apigen create api -api
// GROUP/VERSION/KIND [-namespaced=false] [-hub]" add to an operator that
// init -api made: webhooks of a kind (a file with the marker and skeleton
// and a test for each, their server in main.go, -webhook in generate.go's
// line; a conversion webhook needs each version's package but the hub's,
// the storage version's, to declare Convert<Kind>To<Hub> and
// Convert<Kind>From<Hub>), a new version of a kind (its types and the
// conversion functions of webhook.Spoke, the existing version made the
// storage version, the hub; with -hub, of a kind of one version, the new
// version made the storage version, and the conversion functions, to and
// from it, written into the old version's package; the kind's scope,
// which -namespaced may only repeat), or a new kind (its
// types, a controller and its test, started in main.go; namespaced, or
// cluster-scoped with -namespaced=false); then they generate as
// generate.go's line says and run go mod tidy (see docs/new-api.md). They
// write no file that exists, and change the operator's files only by
// adding to them: lines above the "// +apigen:scaffold:..." marker
// comments that init and create write, with the imports the lines need
// (printing what to add where a marker is gone); new flags in
// generate.go's go:generate line, before its API directory (-webhook for
// the first webhooks, the line then written again); "// +kubebuilder:storageversion"
// below the +genclient of the version a new version converts to (with
// -hub, removed from the old version's markers); and the
// types of a new kind or version in the AddKnownTypes call of a package
// that registers its types itself. They check their input before they write, write over
// no change saved since they read the module, and undo what they wrote if
// a later step fails.
//
// SIGINT and SIGTERM stop apigen with every process of the run: the go
// commands it runs, each in a process group of its own, are killed with
// their groups, and, on Linux, where apigen is the child subreaper of
// what it starts, every other process below it too (the go list commands
// that golang.org/x/tools/go/packages starts, and what a killed process
// started, which apigen adopts). A SIGKILL of apigen cannot be handled:
// on Linux the kernel then kills the go commands that apigen itself
// started (the parent-death signal), but not the go list commands of the
// package loads nor what any go command started (go run's program, the
// compiler, a process a wrapper of the go command starts): those run to
// their end, orphaned. On other systems a SIGKILL kills none of them.
//
// With -verify nothing is written in the module: apigen exits with status
// 1 and lists every file that a run would change, add or remove.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

func main() {
	if percent, ok := gcPercent(os.Getenv); ok {
		debug.SetGCPercent(percent)
	}
	becomeSubreaper()
	ctx, cancel := context.WithCancel(context.Background())
	handleSignals(cancel)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	exit(code)
}

// lazyGC is the GOGC of apigen unless the user sets one. A run loads the
// API packages and their dependencies, standard library included, once per
// generator, and lives seconds: with Go's default of 100 it spends about a
// third of its CPU collecting that garbage again and again. A generation
// of the Foo API (with -verify) took 24 CPU-seconds and 420 MB with 100,
// 18 and 600 MB with 200, 16 and 1 GB with 400.
const lazyGC = 400

// gcPercent returns the GC percentage apigen sets, and false when the
// user's GOGC (read with getenv) decides.
func gcPercent(getenv func(string) string) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	return lazyGC, true
}

// run is the command with its arguments; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "init" {
		return runInit(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "create" {
		return runCreate(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("apigen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	finish := bindConfig(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprintln(stderr, "usage: apigen [flags] [API directory, default ./apis]")
		_, _ = fmt.Fprintln(stderr, "       apigen init -name NAME [-api GROUP/VERSION/KIND] ... (a new operator; apigen init -h)")
		_, _ = fmt.Fprintln(stderr, "       apigen create webhook -kind KIND -defaulting|-validation|-conversion (apigen create webhook -h)")
		_, _ = fmt.Fprintln(stderr, "       apigen create api -api GROUP/VERSION/KIND [-namespaced=false] [-hub] (a new kind or version; apigen create api -h)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := finish(fs.Args())
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "apigen: %v\n", err)
		return 2
	}
	err = generateAll(ctx, cfg, stdout)
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

// bindConfig registers the flags of a generation on fs; the function it
// returns makes the config of them and the arguments after them.
func bindConfig(fs *flag.FlagSet) func(args []string) (config, error) {
	var cfg config
	var rbacPaths, webhookPaths string
	fs.StringVar(&cfg.out, "out", "generated", "Directory of the generated clientset, listers, informers and apply configurations.")
	fs.StringVar(&cfg.crdDir, "crd", "config/crd", "Directory of the generated CustomResourceDefinition manifests; empty skips them.")
	fs.StringVar(&cfg.rbacDir, "rbac", "", "Directory of the generated role.yaml (ClusterRole and Roles from +kubebuilder:rbac markers); empty skips it.")
	fs.StringVar(&cfg.rbacRole, "rbac-role", "", "The operator's name: of the generated ClusterRole and Roles, and the app.kubernetes.io/name label of its pods, which the webhook Service selects (required with -rbac and -webhook).")
	fs.StringVar(&rbacPaths, "rbac-paths", "./...", "Space-separated package patterns whose +kubebuilder:rbac markers make the roles, with those of the ctrlkit packages they import.")
	fs.StringVar(&cfg.webhookDir, "webhook", "", "Directory of the generated webhook.yaml and crd-conversion.yaml (from +kubebuilder:webhook and +ctrlkit:conversionwebhook markers); empty skips them.")
	fs.StringVar(&webhookPaths, "webhook-paths", "./...", "Space-separated package patterns, in the module, of which one holds the webhook markers; it gets zz_generated.webhooks.go.")
	fs.StringVar(&cfg.deployDir, "deploy", "", "Directory of the generated deploy manifests (kustomization, namespace, ServiceAccount, role bindings, Deployment); empty skips them. Needs -rbac in the same run.")
	fs.StringVar(&cfg.deployNamespace, "deploy-namespace", "", "The operator's namespace (required with -deploy), which the kustomization creates and kubectl delete -k deletes with everything in it: one of its own, not a shared one; also the namespace of the webhook Service where the markers name none (else controller-gen's \"system\").")
	fs.StringVar(&cfg.deployImage, "deploy-image", "", "The operator's image (required with -deploy).")
	fs.StringVar(&cfg.header, "header", "", "File whose text heads every generated Go file (a license, say), anywhere; none if empty.")
	fs.BoolVar(&cfg.verify, "verify", false, "Write nothing; exit 1 and list the files a run would change if any is out of date.")
	return func(args []string) (config, error) {
		switch len(args) {
		case 0:
			cfg.apis = "apis"
		case 1:
			cfg.apis = args[0]
		default:
			return cfg, fmt.Errorf("one API directory expected, got %q", args)
		}
		cfg.rbacPaths, cfg.webhookPaths = strings.Fields(rbacPaths), strings.Fields(webhookPaths)
		switch {
		case cfg.rbacDir != "" && cfg.rbacRole == "":
			return cfg, errors.New("-rbac needs -rbac-role")
		case cfg.webhookDir != "" && cfg.rbacRole == "":
			return cfg, errors.New("-webhook needs -rbac-role, the operator's name, by which the webhook Service selects its pods")
		case cfg.deployDir != "" && (cfg.rbacDir == "" || cfg.deployNamespace == "" || cfg.deployImage == ""):
			return cfg, errors.New("-deploy needs -rbac, -rbac-role, -deploy-namespace and -deploy-image")
		}
		return cfg, nil
	}
}

// parseConfig returns the config of a generation's arguments, as a
// go:generate line gives them.
func parseConfig(args []string) (config, error) {
	fs := flag.NewFlagSet("apigen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	finish := bindConfig(fs)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	return finish(fs.Args())
}
