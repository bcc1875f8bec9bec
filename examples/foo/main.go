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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/events"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/shard"
)

// Leader election (one Lease) or sharding (one Lease per replica, with
// --sharded) in the controller's namespace, added to the roles generated
// into deploy/role.yaml.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=foo-system,resources=leases,verbs=get;list;watch;create;update;delete

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// options are the command-line flags.
type options struct {
	operator.Flags
	workers int
	resync  time.Duration
}

// run runs the controller with args until SIGINT or SIGTERM and returns the
// process exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("foo", flag.ContinueOnError)
	o := bindFlags(fs)
	return o.Main(fs, args, stderr, o.runController, func() error {
		if o.workers < 1 || o.resync < 0 {
			return fmt.Errorf("--workers must be at least 1 and --resync not negative, got %d and %s", o.workers, o.resync)
		}
		return nil
	})
}

// bindFlags registers the flags on fs.
func bindFlags(fs *flag.FlagSet) *options {
	// The first sync of N Foos costs about 3N requests: 500 QPS lets the
	// API server, not the client, set the pace (see README.md).
	o := &options{Flags: operator.Flags{QPS: 500, Burst: 1000, LeaderElectID: "foo-controller.samplecontroller.k8s.io",
		MetricsAddr: ":8080", ProbeAddr: ":8081"}}
	o.Bind(fs)
	fs.IntVar(&o.workers, "workers", 2, "Number of Foos reconciled at once.")
	fs.DurationVar(&o.resync, "resync", 10*time.Minute, "How often the informers replay every object to the controller (0 disables). An idle resync writes nothing.")
	return o
}

// runController connects to the cluster, checks that it serves the Foo API,
// and runs the controller with its informers and endpoints.
func (o *options) runController(ctx context.Context) error {
	cfg, err := o.RESTConfig("ctrlkit-foo-controller")
	if err != nil {
		return err
	}
	if err := operator.CheckServed(cfg, samplev1alpha1.SchemeGroupVersion); errors.Is(err, operator.ErrNotServed) {
		return fmt.Errorf("%w; install the Foo CRD with: kubectl apply -f foo/crd/samplecontroller.k8s.io_foos.yaml", err)
	} else if err != nil {
		return err
	}
	kubeClient, kubeErr := kubernetes.NewForConfig(cfg)
	fooClient, fooErr := fooclientset.NewForConfig(cfg)
	if err := errors.Join(kubeErr, fooErr); err != nil {
		return err
	}
	recorder, err := events.NewRecorder(ctx, kubeClient, foo.ControllerName, events.WithAddToScheme(samplev1alpha1.AddToScheme))
	if err != nil {
		return err
	}
	kubeInformers := operator.Informers(&o.Flags, func(transform cache.TransformFunc) kubeinformers.SharedInformerFactory {
		return kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, o.resync, kubeinformers.WithTransform(transform))
	})
	fooInformers := operator.Informers(&o.Flags, func(transform cache.TransformFunc) fooinformers.SharedInformerFactory {
		return fooinformers.NewSharedInformerFactoryWithOptions(fooClient, o.resync, fooinformers.WithTransform(transform))
	})
	// Sharded, each replica caches only the Foos it owns and their Deployments.
	m, err := o.Membership(kubeClient)
	if err != nil {
		return err
	}
	fooAPI, deployAPI := fooClient.SamplecontrollerV1alpha1().Foos(""), kubeClient.AppsV1().Deployments("")
	if err := errors.Join(shard.Informer[*samplev1alpha1.Foo](m, fooInformers.InformerFor, fooAPI.List, fooAPI.Watch, shard.ByName),
		shard.Informer[*appsv1.Deployment](m, kubeInformers.InformerFor, deployAPI.List, deployAPI.Watch, shard.ByController(samplev1alpha1.Kind("Foo")))); err != nil {
		return err
	}
	foos := fooInformers.Samplecontroller().V1alpha1().Foos()
	ctrl, err := foo.NewController(ctx, kubeClient, fooClient, kubeInformers.Apps().V1().Deployments(), foos, recorder,
		append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)
	if err != nil {
		return err
	}
	if err := operator.Shard(&o.Flags, ctrl.Controller, kubeClient, shard.ObjectNames(foos.TypedInformer())); err != nil {
		return err
	}
	return operator.Run(ctx, append(o.Options(kubeClient), operator.WithControllers(ctrl))...)
}
