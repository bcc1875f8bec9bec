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
//		foo.Options{Workers: 2})
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
	"time"

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
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
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

// Options configures NewController. Zero values select the defaults of the
// queue package, and an event recorder wired to the API server.
type Options struct {
	// Workers is the number of Foos reconciled at once. Default 1.
	Workers int
	// Recorder receives the controller's events. Default: a recorder from
	// events.NewRecorder that writes to the API server and stops with the
	// context given to NewController.
	Recorder record.EventRecorder
	// Metrics receives the worker loop's measurements. Default: none.
	Metrics queue.Metrics
	// RateLimiter decides retry delays. Default queue.DefaultRateLimiter.
	RateLimiter workqueue.TypedRateLimiter[cache.ObjectName]
	// ReconcileTimeout bounds one reconcile. Default: no bound.
	ReconcileTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits for in-flight reconciles.
	// Default queue.DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// Controller keeps each Foo's Deployment and status in line with its spec.
type Controller struct {
	kube         kubernetes.Interface
	foos         fooclientset.Interface
	fooLister    foolisters.FooLister
	deployLister appslisters.DeploymentLister
	// byControllerUID files Deployments under their controller's UID;
	// byDeploymentName files Foos under the Deployment they want.
	byControllerUID  *informer.Index[*appsv1.Deployment]
	byDeploymentName *informer.Index[*samplev1alpha1.Foo]
	recorder         record.EventRecorder
	queue            *queue.Controller[cache.ObjectName]
	synced           []cache.InformerSynced
}

// NewController wires a Foo controller onto the given informers; it
// registers its event handlers and an index on the Deployment informer, so
// it must be called before the informer factories are started. ctx carries
// the logger and, when Options.Recorder is nil, bounds the default event
// recorder. Start the factories, then call Run.
func NewController(
	ctx context.Context,
	kubeClient kubernetes.Interface,
	fooClient fooclientset.Interface,
	deploymentInformer appsinformers.DeploymentInformer,
	fooInformer fooinformers.FooInformer,
	opts Options,
) (*Controller, error) {
	if kubeClient == nil || fooClient == nil || deploymentInformer == nil || fooInformer == nil {
		return nil, errors.New("foo: NewController needs both clients and both informers")
	}
	recorder := opts.Recorder
	if recorder == nil {
		var err error
		recorder, err = events.NewRecorder(ctx, kubeClient, ControllerName,
			events.WithAddToScheme(samplev1alpha1.AddToScheme))
		if err != nil {
			return nil, fmt.Errorf("foo: event recorder: %w", err)
		}
	}
	deployInf := deploymentInformer.Informer()
	byControllerUID, err := informer.NewIndex(deployInf, controllerUIDIndex, controllerUID)
	if err != nil {
		return nil, fmt.Errorf("foo: %w (%s)", err, indexRegistrationHint)
	}
	byDeploymentName, err := informer.NewIndex(fooInformer.Informer(), deploymentNameIndex, wantedDeployment)
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
		recorder:         recorder,
	}
	q, err := queue.New(ControllerName, reconcile.Reconciler[cache.ObjectName](c), queue.Options[cache.ObjectName]{
		Workers:          opts.Workers,
		RateLimiter:      opts.RateLimiter,
		ReconcileTimeout: opts.ReconcileTimeout,
		ShutdownTimeout:  opts.ShutdownTimeout,
		Metrics:          opts.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("foo: %w", err)
	}
	c.queue = q

	// Objects of an unexpected type are reported through ctx's logger.
	handlerCtx := informer.WithContext(ctx)
	fooReg, err := fooInformer.Informer().AddEventHandler(informer.EnqueueHandler[*samplev1alpha1.Foo](q, handlerCtx))
	if err != nil {
		q.ShutDown()
		return nil, fmt.Errorf("foo: watching Foos: %w", err)
	}
	// A Deployment concerns the Foo that controls it and, whoever controls
	// it, the Foos that want its name: a Foo refused because of a foreign
	// Deployment recovers as soon as that Deployment goes.
	deployReg, err := deployInf.AddEventHandler(informer.EnqueueMappedHandler(c.concernedFoos, q, handlerCtx))
	if err != nil {
		q.ShutDown()
		return nil, fmt.Errorf("foo: watching Deployments: %w", err)
	}
	c.synced = []cache.InformerSynced{fooReg.HasSynced, deployReg.HasSynced}
	if err := q.WaitForSync(c.synced...); err != nil {
		q.ShutDown()
		return nil, fmt.Errorf("foo: %w", err)
	}
	return c, nil
}

// Run reconciles Foos until ctx is cancelled, then shuts down gracefully
// (see queue.Controller.Run). Workers start once both informers' initial
// lists have been handled.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx)
}

// HasSynced reports whether the Foo and Deployment event handlers have seen
// their informers' initial lists: a readiness signal.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// ShutDown releases a Controller that will never be run (Run does this
// itself when it returns).
func (c *Controller) ShutDown() { c.queue.ShutDown() }

// Enqueue asks for the Foo with the given key to be reconciled.
func (c *Controller) Enqueue(key cache.ObjectName) { c.queue.Add(key) }

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
