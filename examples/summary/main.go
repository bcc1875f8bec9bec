// Command summary runs an operator that follows an API it does not own:
// for every Foo (the custom resource of the foo operator, group
// samplecontroller.k8s.io), it keeps a ConfigMap that summarizes it, but
// only while the Foo CRD is installed. It starts and turns ready without
// the CRD, starts watching Foos when the CRD is installed, stops cleanly
// when it is removed, and starts again when it comes back, never
// restarting.
//
//	go run ./examples/summary --kubeconfig ~/.kube/config
//
// See README.md beside this file.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// The permissions the operator needs, generated into deploy/role.yaml
// (make generate, which also reads the marker of informer/optional: get,
// list and watch on CustomResourceDefinitions): the Foos it reads, the
// summaries it keeps, and the Lease of leader election.
//
// +kubebuilder:rbac:groups=samplecontroller.k8s.io,resources=foos,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=summary-system,resources=leases,verbs=get;create;update

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// options are the command-line flags.
type options struct {
	operator.Flags
	workers int
}

// bindFlags registers the flags on fs.
func bindFlags(fs *flag.FlagSet) *options {
	o := &options{Flags: operator.Flags{LeaderElectID: "foo-summary", MetricsAddr: ":8080", ProbeAddr: ":8081"}}
	o.Bind(fs)
	fs.IntVar(&o.workers, "workers", 2, "Number of Foos summarized at once.")
	return o
}

// run runs the operator with args until SIGINT or SIGTERM and returns the
// process exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	o := bindFlags(fs)
	return o.Main(fs, args, stderr, o.runOperator, func() error {
		if o.workers < 1 {
			return fmt.Errorf("--workers must be positive, got %d", o.workers)
		}
		return nil
	})
}

// runOperator connects to the cluster and runs the summary controller:
// the Foos' informer follows the Foo CRD, the summaries' informer runs
// all along.
func (o *options) runOperator(ctx context.Context) error {
	cfg, err := o.RESTConfig("ctrlkit-summary")
	if err != nil {
		return err
	}
	// Only the core API must be there; the Foos may come later.
	if err := operator.CheckServed(cfg, corev1.SchemeGroupVersion); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds, err := apiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	foos, err := fooclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var apiOpts []optional.Option
	if o.MetricsAddr != "" && o.MetricsAddr != "0" {
		apiOpts = append(apiOpts, optional.WithMetrics(o.Metrics()))
	}
	apis := optional.NewAPIs(crds, kube.Discovery(), apiOpts...)
	fooInformer := optional.NewInformer(apis, v1alpha1.SchemeGroupVersion.WithResource("foos"), func() cache.TypedSharedIndexInformer[*v1alpha1.Foo] {
		// A new factory each time the CRD is installed: a stopped
		// informer cannot run again.
		return fooinformers.NewSharedInformerFactory(foos, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
	})
	// Only the summaries are cached of the ConfigMaps.
	factory := operator.Informers(&o.Flags, func(transform cache.TransformFunc) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(transform),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = managedBy + "=" + manager }))
	})
	ctrl, err := newController(kube, fooInformer, factory.Core().V1().ConfigMaps(), append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)
	if err != nil {
		return err
	}
	if err := apis.Err(); err != nil {
		return err
	}
	return operator.Run(ctx, append(o.Options(kube), operator.WithInformers(apis), operator.WithControllers(ctrl))...)
}
