// Package foo is a Foo -> Deployment controller built from ctrlkit's blocks,
// a drop-in for kubernetes/sample-controller's API
// (samplecontroller.k8s.io/v1alpha1, kind Foo).
//
// For every Foo it keeps one Deployment named spec.deploymentName in the
// Foo's namespace, controlled by the Foo, running spec.replicas nginx pods,
// and mirrors the Deployment's available replicas and readiness into the
// Foo's status. It writes only when something differs, corrects only what
// it owns (its own container and the replicas), never touches a
// Deployment it does not control, and reports invalid specs and foreign
// Deployments with a Warning event and a Ready=False condition, once, instead
// of retrying them: a Deployment of the wanted name appearing, changing or
// going wakes the Foo up.
//
// # Writes and events
//
// Every write is one a user would miss. A new Foo costs three writes: the
// Deployment's create, a status update when the Foo is first seen
// (Ready=False with reason DeploymentNotReady, "0 of N replicas available",
// and the observedGeneration that says this spec was seen) and one when the
// Deployment becomes available (Ready=True). Both status updates are Ready
// transitions: the first is what a user sees if the pods never come up,
// and together they tell how long the Foo took to become ready. Later
// status updates happen only when the Deployment's available replicas or
// readiness change. A reconcile that runs before the informer has seen the
// controller's own last status update of the Foo writes nothing: the write
// would meet a conflict, and the update's watch event brings the Foo back.
//
// Events are for what the status cannot say:
//   - a Warning (InvalidSpec, ErrResourceExists) for a problem the user must
//     fix, once per generation of the Foo, beside Ready=False with the same
//     reason;
//   - a Normal Synced event when the controller overrode someone else's
//     change: it corrected a Deployment that drifted from the Foo, or
//     deleted one the Foo controlled under an earlier deploymentName.
//
// Each event is recorded when what it reports happens, before the status
// update that follows: a status update that fails is retried without
// recording the event again, and the retry, which finds nothing left to
// override, does not lose it.
//
// Creating the Deployment and mirroring its availability are not events:
// the Foo's status and the Deployment's controller reference record them,
// and an event per Foo would add a third more writes to a large rollout.
//
// Embedding it in another binary built on package queue/operator, whose
// parsed flags (flags, an *operator.Flags) hand out the informer factories,
// the options of every controller (shutdown timeout, metrics), sharding
// and the options of Run; NewController takes the typed informers the
// factories return:
//
//	kubeInformers := operator.Informers(flags, func(transform cache.TransformFunc) kubeinformers.SharedInformerFactory {
//		return kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 10*time.Minute, kubeinformers.WithTransform(transform))
//	})
//	fooInformers := operator.Informers(flags, func(transform cache.TransformFunc) fooinformers.SharedInformerFactory {
//		return fooinformers.NewSharedInformerFactoryWithOptions(fooClient, 10*time.Minute, fooinformers.WithTransform(transform))
//	})
//	foos := fooInformers.Samplecontroller().V1alpha1().Foos()
//	ctrl, err := foo.NewController(ctx, kubeClient, fooClient, kubeInformers.Apps().V1().Deployments(), foos,
//		recorder, append(flags.ControllerOptions(), queue.WithWorkers(2))...)
//	if err != nil {
//		return err
//	}
//	if err := operator.Shard(flags, ctrl.Controller, kubeClient, shard.ObjectNames(foos.TypedInformer())); err != nil {
//		return err
//	}
//	return operator.Run(ctx, append(flags.Options(kubeClient), operator.WithControllers(ctrl))...)
//
// Without package operator, start the factories and call ctrl.Run(ctx) (see
// the example of NewController).
package foo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// The permissions the controller needs, from which the roles in
// examples/foo/deploy/role.yaml are generated (make generate). The owner
// references of the Deployments it creates block the owner's deletion,
// which the OwnerReferencesPermissionEnforcement admission plugin allows
// only to those who may update the Foo's finalizers.
//
// +kubebuilder:rbac:groups=samplecontroller.k8s.io,resources=foos,verbs=get;list;watch
// +kubebuilder:rbac:groups=samplecontroller.k8s.io,resources=foos/status,verbs=update
// +kubebuilder:rbac:groups=samplecontroller.k8s.io,resources=foos/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// DeploymentFields are the fields of a Deployment the controller reads,
// besides its identity and owner references: NewController trims the
// Deployments' cache to them (informer.Trim), and writes Deployments with
// patches of what it changes.
var DeploymentFields = []string{"spec.replicas", "spec.template.spec.containers.name", "spec.template.spec.containers.image", "status.observedGeneration", "status.updatedReplicas", "status.availableReplicas"}

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "foo-controller"

// Event reasons and messages, as sample-controller emits them.
const (
	// ReasonSynced is the reason of the Normal event sent after the controller
	// corrected a drifted Deployment or deleted a stale one for a Foo.
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
// event, Ready=False) once per generation of the Foo and, once the status
// says so, not retried: the controller watches Deployments by name, so the
// Foo is reconciled again as soon as that Deployment changes or goes.
var ErrResourceExists = errors.New("deployment exists and is not controlled by this Foo")

// Controller keeps each Foo's Deployment and status in line with its spec.
// It is a queue.Controller of Foo keys: Run, HasSynced, Add and Abort are the
// queue's.
type Controller struct {
	*queue.Controller[cache.ObjectName]
	kube     kubernetes.Interface
	foos     fooclientset.Interface
	byOwner  *informer.Index[*appsv1.Deployment]  // Deployments by their controller's UID
	byWanted *informer.Index[*samplev1alpha1.Foo] // Foos by the namespace/name of the Deployment they want
	recorder record.EventRecorder
	reports  sync.Map // Foo key -> the last problem this process reported
	// fooWrites and deployWrites write Foos and Deployments, and keep a
	// reconcile from acting on a cache that has not seen their writes.
	fooWrites    *write.Objects[*samplev1alpha1.Foo]
	deployWrites *write.Objects[*appsv1.Deployment]
}

// NewController wires a Foo controller onto the given informers, reporting
// through recorder (events.NewRecorder in a binary, eventstest in tests);
// opts configure its queue.Controller. It adds two indexes to the
// informers, so it must be called before the factories are started; its
// event handlers are registered by Run and removed when Run returns, so a
// controller that is never run leaves nothing behind. ctx carries the logger
// of the handlers' reports. Every argument is required. A resync of the
// Foo informer reconciles every Foo; the Deployment informer's resyncs
// enqueue nothing.
func NewController(ctx context.Context, kubeClient kubernetes.Interface, fooClient fooclientset.Interface,
	deployments appsinformers.TypedDeploymentInformer, foos fooinformers.TypedFooInformer, recorder record.EventRecorder, opts ...queue.Option) (*Controller, error) {
	c := &Controller{kube: kubeClient, foos: fooClient, recorder: recorder,
		fooWrites: write.New(foos.TypedInformer()), deployWrites: write.New(deployments.TypedInformer())}
	if err := informer.Trim[*appsv1.Deployment](deployments.Informer(), DeploymentFields...); err != nil {
		return nil, err
	}
	// Both indexes file each object under one value of its own: in 1,024
	// buckets, they take about a sixth of the memory, and a lookup among
	// 10,000 Foos checks about ten.
	var err error
	if c.byOwner, err = informer.NewIndex(deployments.TypedInformer(), "ctrlkit.foo/controller-uid", owner.ControllerUID[*appsv1.Deployment], informer.WithBuckets(1024)); err != nil {
		return nil, err
	}
	// Foos are filed under the namespace/name of the Deployment they want.
	if c.byWanted, err = informer.NewIndex(foos.TypedInformer(), "ctrlkit.foo/deployment-name", func(foo *samplev1alpha1.Foo) []string {
		return []string{cache.ObjectName{Namespace: foo.Namespace, Name: foo.Spec.DeploymentName}.String()}
	}, informer.WithBuckets(1024)); err != nil {
		return nil, err
	}
	if c.Controller, err = queue.New(ControllerName, reconcile.Reconciler[cache.ObjectName](c), opts...); err != nil {
		return nil, err
	}
	// A Deployment concerns the Foo that controls it and, whoever controls
	// it, the Foos that want its name: a Foo refused because of a foreign
	// Deployment recovers as soon as that Deployment goes. A resync of the
	// Foos reconciles each Foo, so the Deployments' resyncs are dropped.
	deploymentChanged := informer.WithPredicates(informer.ResourceVersionChanged())
	if err := c.Watch(queue.On(foos.TypedInformer(), informer.EnqueueHandler[*samplev1alpha1.Foo](c, informer.WithContext(ctx))),
		queue.On(deployments.TypedInformer(), owner.EnqueueOwner[*appsv1.Deployment](samplev1alpha1.Kind("Foo"), c, informer.WithContext(ctx), deploymentChanged)),
		queue.On(deployments.TypedInformer(), informer.EnqueueByIndex(c.byWanted, informer.KeyOf[*appsv1.Deployment], c, informer.WithContext(ctx), deploymentChanged))); err != nil {
		return nil, err
	}
	return c, nil
}

// Reconcile brings the Deployment and status of the Foo named by key in line
// with its spec. It is the controller's reconcile.Reconciler; tests call it
// directly.
func (c *Controller) Reconcile(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	// foo is the cache's object: read, never written (writeStatus copies).
	// While the cache has not seen this process's own last status update,
	// Get answers with a stale-cache error, which is requeued quietly:
	// whatever this reconcile wrote would meet a conflict.
	foo, found, err := c.fooWrites.Get(key)
	if err == nil && !found {
		c.reports.Delete(key)
	}
	if err != nil || !found || foo.DeletionTimestamp != nil {
		return reconcile.Result{}, err
	}
	status := foo.Status.DeepCopy()
	if errs := samplev1alpha1.ValidateFoo(foo); len(errs) > 0 {
		msg := errs.ToAggregate().Error()
		return c.refuse(ctx, foo, status, samplev1alpha1.ReasonInvalidSpec, msg, fmt.Errorf("invalid Foo spec: %s", msg))
	}

	deployments := c.kube.AppsV1().Deployments(foo.Namespace)
	// Created as the Foo asks, or corrected in what the controller owns;
	// a Deployment of that name controlled by something else is refused.
	creating := false
	d, change, err := c.deployWrites.Ensure(ctx, deployments, newDeployment(foo), func(d *appsv1.Deployment) error {
		creating = d.ResourceVersion == ""
		if owner.Check(d, foo) != owner.Controlled {
			return ErrResourceExists
		}
		correctDeployment(d, foo)
		return nil
	})
	switch {
	case errors.Is(err, ErrResourceExists):
		msg := fmt.Sprintf(MessageResourceExists, foo.Spec.DeploymentName)
		return c.refuse(ctx, foo, status, samplev1alpha1.ReasonErrResourceExists, msg,
			fmt.Errorf("Deployment %s/%s: %w", foo.Namespace, foo.Spec.DeploymentName, ErrResourceExists))
	case err != nil && creating && !errors.Is(err, reconcile.ErrStaleCache):
		setReady(foo, status, metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady,
			fmt.Sprintf("Creating Deployment %q failed: %v", foo.Spec.DeploymentName, err))
		return reconcile.Result{}, errors.Join(err, c.writeStatus(ctx, foo, status))
	case err != nil: // a stale cache is requeued quietly
		return reconcile.Result{}, fmt.Errorf("writing Deployment %s/%s: %w", foo.Namespace, foo.Spec.DeploymentName, err)
	case change == write.Updated:
		// Recorded as soon as the override succeeded: the status write
		// below may fail, and its retry finds nothing left to override.
		c.recorder.Event(foo, corev1.EventTypeNormal, ReasonSynced, MessageSynced)
	}

	// Deployments this Foo controls under another name are left over from a
	// rename.
	controlled, err := c.byOwner.List(string(foo.UID))
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, old := range controlled {
		if old.Namespace != foo.Namespace || old.Name == foo.Spec.DeploymentName || old.DeletionTimestamp != nil {
			continue
		}
		if err := c.deployWrites.Delete(ctx, deployments, old); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting stale Deployment %s/%s: %w", old.Namespace, old.Name, err)
		}
		c.recorder.Event(foo, corev1.EventTypeNormal, ReasonSynced, MessageSynced)
	}

	c.reports.Delete(key) // the problem is gone: a later refusal is news again
	status.AvailableReplicas = d.Status.AvailableReplicas
	setReadyFromDeployment(foo, status, d)
	if err := c.writeStatus(ctx, foo, status); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// refuse reports a problem the controller cannot act on, with a Warning
// event and Ready=False, and returns cause as a terminal error: the Foo is
// reconciled again when it or its Deployment changes. The Warning is
// recorded once per generation of the Foo, problem and process (a Warning
// lost with a killed process is recorded again by the next one). The
// condition is written whenever the status does not say so; a failed
// status write is retried without a new Warning. A problem already
// reported and in the status gives no error: it was logged once.
func (c *Controller) refuse(ctx context.Context, foo *samplev1alpha1.Foo, status *samplev1alpha1.FooStatus, reason, msg string, cause error) (reconcile.Result, error) {
	key, report := cache.MetaObjectToName(foo), fmt.Sprintf("%d/%s/%s", foo.Generation, reason, msg)
	last, ok := c.reports.Load(key)
	reported := ok && last == report
	cond := meta.FindStatusCondition(status.Conditions, samplev1alpha1.ConditionReady)
	if reported && cond != nil && cond.Reason == reason && cond.Message == msg &&
		cond.ObservedGeneration == foo.Generation && status.ObservedGeneration == foo.Generation {
		return reconcile.Result{}, nil
	}
	// What was reported is remembered when the Warning is recorded, not
	// after the status write: a status write that keeps failing (a 500, a
	// timeout, a missing permission) is retried, and each retry would
	// record the Warning again. Recording before the write, rather than
	// after it, tells the user even when the status cannot be written.
	if !reported {
		c.recorder.Event(foo, corev1.EventTypeWarning, reason, msg)
		c.reports.Store(key, report)
	}
	setReady(foo, status, metav1.ConditionFalse, reason, msg)
	if err := c.writeStatus(ctx, foo, status); apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err // retried: the report must reach the status
	}
	return reconcile.Result{}, &reconcile.TerminalError{Err: cause, Generation: foo.Generation}
}

// writeStatus updates the Foo's status subresource if status differs from the
// Foo's. A Foo deleted since it was read gives a NotFound error.
func (c *Controller) writeStatus(ctx context.Context, foo *samplev1alpha1.Foo, status *samplev1alpha1.FooStatus) error {
	status.ObservedGeneration = foo.Generation
	_, _, err := c.fooWrites.UpdateStatus(ctx, c.foos.SamplecontrollerV1alpha1().Foos(foo.Namespace), foo, func(foo *samplev1alpha1.Foo) error {
		foo.Status = *status
		return nil
	})
	return err
}

// setReadyFromDeployment derives the Ready condition from the Deployment.
func setReadyFromDeployment(foo *samplev1alpha1.Foo, status *samplev1alpha1.FooStatus, d *appsv1.Deployment) {
	want, available := desiredReplicas(foo), d.Status.AvailableReplicas
	ready, reason := metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady
	if d.Generation <= d.Status.ObservedGeneration && d.Status.UpdatedReplicas >= want && available >= want {
		ready, reason = metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady
	}
	setReady(foo, status, ready, reason, fmt.Sprintf("Deployment %q has %d of %d replicas available", d.Name, available, want))
}

func setReady(foo *samplev1alpha1.Foo, status *samplev1alpha1.FooStatus, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: samplev1alpha1.ConditionReady, Status: s,
		Reason: reason, Message: msg, ObservedGeneration: foo.Generation})
}

func desiredReplicas(foo *samplev1alpha1.Foo) int32 {
	return ptr.Deref(foo.Spec.Replicas, samplev1alpha1.DefaultReplicas)
}

// deploymentLabels are the labels of the Deployment's selector and pods.
func deploymentLabels(foo *samplev1alpha1.Foo) map[string]string {
	return map[string]string{"app": "nginx", "controller": foo.Name}
}

// nginxContainer is the controller's own container in the pods.
func nginxContainer() corev1.Container { return corev1.Container{Name: "nginx", Image: "nginx:latest"} }

// newDeployment returns the Deployment a Foo asks for, controlled by the Foo.
func newDeployment(foo *samplev1alpha1.Foo) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: foo.Spec.DeploymentName, Namespace: foo.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(foo, samplev1alpha1.SchemeGroupVersion.WithKind("Foo"))}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(desiredReplicas(foo)),
			Selector: &metav1.LabelSelector{MatchLabels: deploymentLabels(foo)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: deploymentLabels(foo)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{nginxContainer()}},
			},
		},
	}
}

// correctDeployment sets what the controller owns in d: the replicas and
// its own container, found by name (its image); a missing container of its
// own is added after the others. Everything else, including containers
// others added (a sidecar injected by a policy or by kubectl edit),
// annotations and fields the API server defaults, is left alone, so a
// matching Deployment is never rewritten. The pod labels need no
// correcting: the API server keeps them matching the selector, which
// cannot change after the create.
func correctDeployment(d *appsv1.Deployment, foo *samplev1alpha1.Foo) {
	d.Spec.Replicas = ptr.To(desiredReplicas(foo))
	own, containers := nginxContainer(), d.Spec.Template.Spec.Containers
	if i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == own.Name }); i < 0 {
		d.Spec.Template.Spec.Containers = append(containers, own)
	} else {
		containers[i].Image = own.Image
	}
}
