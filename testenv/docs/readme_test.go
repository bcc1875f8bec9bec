package docs

// The ```go blocks of the repository's Markdown files, line for line, built
// (and, for the test, run) against the library the way another module uses
// it. TestREADMEBlocksCompile checks that each block stands here.

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubeinformers "k8s.io/client-go/informers" // as examples/foo/README.md names it
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/events"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// docs/controllers.md, "Wiring a controller".

// newController logs each Deployment's available replicas whenever it changes.
func newController(deployments appsinformers.TypedDeploymentInformer, opts ...queue.Option) (*queue.Controller[cache.ObjectName], error) {
	lister := deployments.Lister()
	ctrl, err := queue.New("deployments", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		d, err := lister.Deployments(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // gone: nothing to do
		}
		if err != nil {
			return reconcile.Result{}, err // retried with per-key backoff
		}
		klog.FromContext(ctx).Info("Observed", "availableReplicas", d.Status.AvailableReplicas) // the logger carries the key
		return reconcile.Result{}, nil
	}), opts...)
	if err != nil {
		return nil, err
	}
	// Registered when Run starts and removed when it returns: a controller
	// that never runs leaves nothing behind.
	if err := ctrl.Watch(queue.On(deployments.TypedInformer(), informer.EnqueueHandler[*appsv1.Deployment](ctrl))); err != nil {
		return nil, err
	}
	return ctrl, nil
}

// docs/operator.md, "A whole operator". A function named main in a test file is
// an ordinary function: this one is built, not run.
func main() {
	flags := operator.Flags{LeaderElectID: "deployment-watcher", MetricsAddr: ":8080", ProbeAddr: ":8081"}
	fs := flag.NewFlagSet("deployment-watcher", flag.ContinueOnError)
	flags.Bind(fs) // --kubeconfig, --leader-elect, --sharded, --metrics-bind-address, -v, ...
	os.Exit(flags.Main(fs, os.Args[1:], os.Stderr, func(ctx context.Context) error {
		cfg, err := flags.RESTConfig("deployment-watcher")
		if err != nil {
			return err
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		// Started and stopped by Run; managedFields are dropped from the
		// cache unless --keep-managed-fields.
		factory := operator.Informers(&flags, func(transform cache.TransformFunc) informers.SharedInformerFactory {
			return informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute, informers.WithTransform(transform))
		})
		// With --sharded, the Deployment informer caches only this replica's Deployments.
		m, err := flags.Membership(kube)
		if err != nil {
			return err
		}
		api := kube.AppsV1().Deployments("")
		if err := shard.Informer[*appsv1.Deployment](m, factory.InformerFor, api.List, api.Watch, shard.ByName); err != nil {
			return err
		}
		deployments := factory.Apps().V1().Deployments()
		// The flags' shutdown timeout and metrics, then the controller's own options.
		ctrl, err := newController(deployments, append(flags.ControllerOptions(), queue.WithWorkers(2))...)
		if err != nil {
			return err
		}
		// With --sharded, this replica reconciles only the Deployments it owns.
		if err := operator.Shard(&flags, ctrl, kube, shard.ObjectNames(deployments.TypedInformer())); err != nil {
			return err
		}
		// Leader election or sharding, /healthz, /readyz and /metrics as the flags say;
		// on SIGTERM the controller drains, then the informers and servers stop.
		return operator.Run(ctx, append(flags.Options(kube), operator.WithControllers(ctrl))...)
	}, nil))
}

var _ = main

// docs/memory.md, "Memory".

// trimmedDeployments caches only the replicas, the containers and the
// available replicas of Deployments; Ensure patches what its mutate changes.
func trimmedDeployments(factory informers.SharedInformerFactory) (*write.Objects[*appsv1.Deployment], error) {
	deployments := factory.Apps().V1().Deployments()
	err := informer.Trim[*appsv1.Deployment](deployments.Informer(), "spec.replicas",
		"spec.template.spec.containers.name", "spec.template.spec.containers.image", "status.availableReplicas")
	if err != nil {
		return nil, err
	}
	return write.New(deployments.TypedInformer()), nil
}

var _ = trimmedDeployments

// docs/testing.md, "Testing".
func TestController(t *testing.T) {
	kube := fake.NewClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	reconciletest.Strict(kube) // resourceVersions and 409s, as an API server
	factory := informers.NewSharedInformerFactory(kube, 0)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	ctrl, err := newController(factory.Apps().V1().Deployments(), queue.WithMetrics(m))
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory)) // stopped when the test ends; a Run error fails it
	queuetest.WaitIdle(t, ctrl, kube)                         // queue empty, nothing in flight, caches caught up
	assert.Equal(t, 1.0, metricstest.Value(t, reg, "controller_runtime_reconcile_total",
		map[string]string{"controller": "deployments", "result": "success"}))
}

// examples/foo/README.md, "Embed the controller in another binary".
func embedFoo(ctx context.Context, kubeClient kubernetes.Interface, fooClient fooclientset.Interface) error {
	kubeInformers := kubeinformers.NewSharedInformerFactory(kubeClient, 10*time.Minute)
	fooInformers := fooinformers.NewSharedInformerFactory(fooClient, 10*time.Minute)
	recorder, err := events.NewRecorder(ctx, kubeClient, foo.ControllerName, events.WithAddToScheme(samplev1alpha1.AddToScheme))
	if err != nil {
		return err
	}
	ctrl, err := foo.NewController(ctx, kubeClient, fooClient,
		kubeInformers.Apps().V1().Deployments(),
		fooInformers.Samplecontroller().V1alpha1().Foos(),
		recorder, queue.WithWorkers(2))
	if err != nil {
		return err
	}
	return operator.Run(ctx, // until ctx is cancelled; then a graceful stop
		operator.WithInformers(kubeInformers, fooInformers),
		operator.WithControllers(ctrl),
		operator.WithProbes(":8081"))
}

var _ = embedFoo
