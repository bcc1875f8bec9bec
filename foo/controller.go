// Package foo is a Foo -> Deployment controller built from ctrlkit's blocks,
// a drop-in for kubernetes/sample-controller's API
// (samplecontroller.k8s.io/v1alpha1, kind Foo).
//
// For every Foo it keeps one Deployment named spec.deploymentName in the
// Foo's namespace, controlled by the Foo, running spec.replicas nginx pods,
// and mirrors the Deployment's available replicas and readiness into the
// Foo's status. It writes only when something differs, never touches a
// Deployment it does not control, and reports invalid specs with a Warning
// event and a Ready=False condition instead of retrying them.
//
// Embedding it in another binary:
//
//	kubeInformers := kubeinformers.NewSharedInformerFactory(kubeClient, 10*time.Minute)
//	fooInformers := fooinformers.NewSharedInformerFactory(fooClient, 10*time.Minute)
//	ctrl, err := foo.NewController(ctx, kubeClient, fooClient,
//		kubeInformers.Apps().V1().Deployments(), fooInformers.Samplecontroller().V1alpha1().Foos(),
//		foo.WithQueueOptions(queue.WithWorkers(2)))
//	if err != nil {
//		return err
//	}
//	kubeInformers.Start(ctx.Done())
//	fooInformers.Start(ctx.Done())
//	return ctrl.Run(ctx)
package foo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ctrlkit/ctrlkit/events"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions/samplecontroller/v1alpha1"
	foolisters "github.com/ctrlkit/ctrlkit/foo/generated/listers/samplecontroller/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "foo-controller"

// Event reasons and messages, as sample-controller emits them.
const (
	// ReasonSynced is the reason of the Normal event sent after the controller
	// changed something for a Foo.
	ReasonSynced = "Synced"
	// MessageSynced is the message of the Synced event.
	MessageSynced = "Foo synced successfully"
	// MessageResourceExists is the message (formatted with the Deployment's
	// name) of the Warning event sent when the Deployment a Foo names exists
	// and is controlled by something else.
	MessageResourceExists = "Resource %q already exists and is not managed by Foo"
)

// ErrResourceExists is wrapped by the terminal error returned for a Foo
// whose Deployment is controlled by something else. It is reported (Warning
// event, Ready=False) once per generation of the Foo and not retried: the
// controller watches Deployments by name, so the Foo is reconciled again as
// soon as that Deployment changes or goes.
var ErrResourceExists = errors.New("deployment exists and is not controlled by this Foo")

// Option configures NewController. A nil Option is ignored.
type Option func(*options)

type options struct {
	recorder record.EventRecorder
	queue    []queue.Option
}

// WithRecorder sends the controller's events to r. By default Run records
// them through events.NewRecorder, to the API server, until Run returns.
func WithRecorder(r record.EventRecorder) Option {
	return func(o *options) { o.recorder = r }
}

// WithQueueOptions passes options (workers, metrics, timeouts, rate
// limiter) to the controller's queue.Controller.
func WithQueueOptions(opts ...queue.Option) Option {
	return func(o *options) { o.queue = append(o.queue, opts...) }
}

// Controller keeps each Foo's Deployment and status in line with its spec.
// It is a queue.Controller of Foo keys: Run, HasSynced, Add and Abort are
// the queue's (Run also runs the default event recorder).
type Controller struct {
	*queue.Controller[cache.ObjectName]
	kube         kubernetes.Interface
	foos         fooclientset.Interface
	fooLister    foolisters.FooLister
	deployLister appslisters.DeploymentLister
	// byControllerUID files Deployments under their controller's UID;
	// byDeploymentName files Foos under the Deployment they want.
	byControllerUID  *informer.Index[*appsv1.Deployment]
	byDeploymentName *informer.Index[*samplev1alpha1.Foo]
	// recorder is the recorder of WithRecorder, else set by Run.
	recorder   record.EventRecorder
	ownsEvents bool
	// reports remembers, per Foo, the last problem this process reported
	// (see reported).
	reports sync.Map
}

// NewController wires a Foo controller onto the given informers. It adds
// two indexes to them, so it must be called before the informer factories
// are started; its event handlers are registered by Run and removed when
// Run returns, so a controller that is never run leaves nothing behind.
// ctx carries the logger that reports objects of an unexpected type. Start
// the factories, then call Run.
func NewController(
	ctx context.Context,
	kubeClient kubernetes.Interface,
	fooClient fooclientset.Interface,
	deploymentInformer appsinformers.DeploymentInformer,
	fooInformer fooinformers.FooInformer,
	opts ...Option,
) (*Controller, error) {
	if kubeClient == nil || fooClient == nil || deploymentInformer == nil || fooInformer == nil {
		return nil, errors.New("foo: NewController needs both clients and both informers")
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	deployInf, fooInf := deploymentInformer.Informer(), fooInformer.Informer()
	byControllerUID, err := informer.NewIndex(deployInf, controllerUIDIndex, controllerUID)
	if err != nil {
		return nil, fmt.Errorf("foo: %w (%s)", err, indexRegistrationHint)
	}
	byDeploymentName, err := informer.NewIndex(fooInf, deploymentNameIndex, wantedDeployment)
	if err != nil {
		return nil, fmt.Errorf("foo: %w (%s)", err, indexRegistrationHint)
	}
	c := &Controller{
		kube:             kubeClient,
		foos:             fooClient,
		fooLister:        fooInformer.Lister(),
		deployLister:     deploymentInformer.Lister(),
		byControllerUID:  byControllerUID,
		byDeploymentName: byDeploymentName,
		recorder:         o.recorder,
		ownsEvents:       o.recorder == nil,
	}
	if c.recorder == nil {
		c.recorder = discardEvents{}
	}
	c.Controller, err = queue.New(ControllerName, reconcile.Reconciler[cache.ObjectName](c), o.queue...)
	if err != nil {
		return nil, fmt.Errorf("foo: %w", err)
	}
	// Objects of an unexpected type are reported through ctx's logger.
	reports := informer.WithContext(ctx)
	// A Deployment concerns the Foo that controls it and, whoever controls
	// it, the Foos that want its name: a Foo refused because of a foreign
	// Deployment recovers as soon as that Deployment goes.
	err = errors.Join(
		c.Watch(fooInf, informer.EnqueueHandler[*samplev1alpha1.Foo](c, reports)),
		c.Watch(deployInf, informer.EnqueueMappedHandler(c.concernedFoos, c, reports)))
	if err != nil {
		return nil, fmt.Errorf("foo: %w", err)
	}
	return c, nil
}

// Run reconciles Foos until ctx is cancelled, then shuts down gracefully
// (see queue.Controller.Run). Without WithRecorder, it records events
// through a recorder of its own (events.NewRecorder) that stops once the
// last reconcile has returned.
func (c *Controller) Run(ctx context.Context) error {
	if c.ownsEvents {
		recCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
		defer stop()
		rec, err := events.NewRecorder(recCtx, c.kube, ControllerName, events.WithAddToScheme(samplev1alpha1.AddToScheme))
		if err != nil {
			return fmt.Errorf("foo: event recorder: %w", err)
		}
		c.recorder = rec
	}
	return c.Controller.Run(ctx)
}

// concernedFoos returns the keys of the Foos a Deployment concerns: the Foo
// that controls it, and the Foos that want a Deployment of its name.
func (c *Controller) concernedFoos(d *appsv1.Deployment) []cache.ObjectName {
	keys, _ := c.byDeploymentName.Keys(cache.MetaObjectToName(d).String())
	if ref, ok := owner.ControllerOfKind(d, samplev1alpha1.Kind("Foo")); ok {
		if k := (cache.ObjectName{Namespace: d.Namespace, Name: ref.Name}); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// discardEvents drops events recorded before Run sets up the recorder.
type discardEvents struct{}

func (discardEvents) Event(runtime.Object, string, string, string)          {}
func (discardEvents) Eventf(runtime.Object, string, string, string, ...any) {}
func (discardEvents) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {
}
