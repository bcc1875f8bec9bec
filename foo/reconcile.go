package foo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/owner"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// Reconcile brings the Deployment and status of the Foo named by key in line
// with its spec. It is the controller's reconcile.Reconciler; tests call it
// directly.
func (c *Controller) Reconcile(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	logger := klog.FromContext(ctx)
	cached, err := c.fooLister.Foos(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Deleted: its Deployments go with garbage collection.
		logger.V(4).Info("Foo no longer exists")
		c.reports.Delete(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading Foo %s from the cache: %w", key, err)
	}
	if cached.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	foo := cached.DeepCopy()
	s := &syncState{foo: foo, status: *foo.Status.DeepCopy()}

	if errs := samplev1alpha1.ValidateFoo(foo); len(errs) > 0 {
		return c.rejectInvalidSpec(ctx, s, errs.ToAggregate().Error())
	}

	deployment, syncErr := c.syncDeployment(ctx, s)
	if syncErr == nil {
		syncErr = c.deleteStaleDeployments(ctx, s)
	}
	if deployment != nil {
		s.status.AvailableReplicas = deployment.Status.AvailableReplicas
		setReadyFromDeployment(s, deployment)
	}
	if err := c.writeStatus(ctx, s); err != nil {
		if syncErr != nil {
			// Retried: the status write failed, whatever the refusal was.
			return reconcile.Result{}, fmt.Errorf("%w (after: %s)", err, syncErr)
		}
		return reconcile.Result{}, err
	}
	if syncErr == nil {
		c.reports.Delete(key) // a later refusal is news again
	}
	if s.gone || errors.Is(syncErr, errAlreadyReported) {
		// Deleted while being reconciled, or refused as before: nothing
		// is left to retry.
		return reconcile.Result{}, nil
	}
	if syncErr != nil {
		return reconcile.Result{}, syncErr
	}
	if s.changed {
		c.recorder.Event(foo, corev1.EventTypeNormal, ReasonSynced, MessageSynced)
	}
	return reconcile.Result{}, nil
}

// syncState is what one reconcile learned and did.
type syncState struct {
	foo *samplev1alpha1.Foo
	// status is the desired status, started from the observed one.
	status samplev1alpha1.FooStatus
	// changed records that the controller wrote something.
	changed bool
	// gone records that the Foo was deleted while being reconciled (its
	// status update found no object).
	gone bool
}

// rejectInvalidSpec reports a spec the controller cannot act on. It writes
// the event and condition once per generation, and returns a terminal error
// so the key is not retried until the Foo changes.
func (c *Controller) rejectInvalidSpec(ctx context.Context, s *syncState, msg string) (reconcile.Result, error) {
	if c.reported(s, samplev1alpha1.ReasonInvalidSpec, msg) {
		klog.FromContext(ctx).V(4).Info("Invalid spec already reported", "problem", msg)
		return reconcile.Result{}, nil
	}
	c.report(s, samplev1alpha1.ReasonInvalidSpec, msg)
	if err := c.writeStatus(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if s.gone {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("invalid Foo spec: %s", msg))
}

// reported reports whether this problem of the Foo's current generation
// was reported, by this process, and the Foo's status says so (Ready=False
// with this reason and message). A refusal is thus reported once per
// generation, and once more by a new process: a Warning event lost with a
// killed process is not lost for good.
func (c *Controller) reported(s *syncState, reason, msg string) bool {
	cond := meta.FindStatusCondition(s.status.Conditions, samplev1alpha1.ConditionReady)
	inStatus := cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == reason && cond.Message == msg &&
		cond.ObservedGeneration == s.foo.Generation && s.status.ObservedGeneration == s.foo.Generation
	last, ok := c.reports.Load(cache.MetaObjectToName(s.foo))
	return inStatus && ok && last == reportOf(s, reason, msg)
}

// report records a Warning event and the Ready=False condition for a
// problem, and remembers that this process reported it.
func (c *Controller) report(s *syncState, reason, msg string) {
	c.recorder.Event(s.foo, corev1.EventTypeWarning, reason, msg)
	setReady(s, metav1.ConditionFalse, reason, msg)
	c.reports.Store(cache.MetaObjectToName(s.foo), reportOf(s, reason, msg))
}

// reportOf identifies a report of a problem of a Foo's generation.
func reportOf(s *syncState, reason, msg string) string {
	return fmt.Sprintf("%d/%s/%s", s.foo.Generation, reason, msg)
}

// errAlreadyReported stops a reconcile whose problem was reported before;
// Reconcile turns it into success.
var errAlreadyReported = errors.New("already reported")

// syncDeployment creates or corrects the Deployment the Foo names. It
// returns the Deployment as last seen (nil if there is none it controls).
func (c *Controller) syncDeployment(ctx context.Context, s *syncState) (*appsv1.Deployment, error) {
	foo := s.foo
	name := foo.Spec.DeploymentName
	existing, err := c.deployLister.Deployments(foo.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		created, err := c.kube.AppsV1().Deployments(foo.Namespace).Create(ctx, newDeployment(foo), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The cache is behind the API server, typically just after this
			// controller created the Deployment. Retry once the cache has
			// it; the status it already shows is left alone.
			return nil, fmt.Errorf("creating Deployment %s/%s (not in the cache yet): %w", foo.Namespace, name, err)
		}
		if err != nil {
			setReady(s, metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady,
				fmt.Sprintf("Creating Deployment %q failed: %v", name, err))
			return nil, fmt.Errorf("creating Deployment %s/%s: %w", foo.Namespace, name, err)
		}
		klog.FromContext(ctx).V(2).Info("Created Deployment", "deployment", klog.KObj(created))
		s.changed = true
		return created, nil
	case err != nil:
		return nil, fmt.Errorf("reading Deployment %s/%s from the cache: %w", foo.Namespace, name, err)
	}

	if owner.Check(existing, foo) != owner.Controlled {
		msg := fmt.Sprintf(MessageResourceExists, name)
		if c.reported(s, samplev1alpha1.ReasonErrResourceExists, msg) {
			klog.FromContext(ctx).V(4).Info("Foreign Deployment already reported", "deployment", klog.KObj(existing))
			return nil, errAlreadyReported
		}
		c.report(s, samplev1alpha1.ReasonErrResourceExists, msg)
		// Retrying cannot help: the Foo is reconciled again when the
		// Deployment of that name changes or goes, or when the Foo changes.
		return nil, reconcile.Terminal(fmt.Errorf("Deployment %s/%s: %w", foo.Namespace, name, ErrResourceExists))
	}

	desired, drifted := correctDeployment(existing, foo)
	if !drifted {
		return existing, nil
	}
	updated, err := c.kube.AppsV1().Deployments(foo.Namespace).Update(ctx, desired, metav1.UpdateOptions{})
	if err != nil {
		return existing, fmt.Errorf("correcting Deployment %s/%s: %w", foo.Namespace, name, err)
	}
	klog.FromContext(ctx).V(2).Info("Corrected Deployment", "deployment", klog.KObj(updated))
	s.changed = true
	return updated, nil
}

// deleteStaleDeployments deletes Deployments this Foo controls under a name
// other than spec.deploymentName: they are left over from a rename.
func (c *Controller) deleteStaleDeployments(ctx context.Context, s *syncState) error {
	controlled, err := c.byControllerUID.List(string(s.foo.UID))
	if err != nil {
		return fmt.Errorf("looking up Deployments of Foo %s: %w", klog.KObj(s.foo), err)
	}
	var errs []error
	for _, d := range controlled {
		if d.Namespace != s.foo.Namespace || d.Name == s.foo.Spec.DeploymentName || d.DeletionTimestamp != nil {
			continue
		}
		uid := d.UID
		err := c.kube.AppsV1().Deployments(d.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting stale Deployment %s: %w", klog.KObj(d), err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted Deployment left over from a rename", "deployment", klog.KObj(d))
		s.changed = true
	}
	return errors.Join(errs...)
}

// writeStatus updates the Foo's status subresource if the desired status
// differs from the observed one. A Foo deleted since it was read from the
// cache is not an error: s.gone is set instead, and its Deployments go with
// garbage collection.
func (c *Controller) writeStatus(ctx context.Context, s *syncState) error {
	s.status.ObservedGeneration = s.foo.Generation
	if equality.Semantic.DeepEqual(s.status, s.foo.Status) {
		return nil
	}
	foo := s.foo.DeepCopy()
	foo.Status = s.status
	if _, err := c.foos.SamplecontrollerV1alpha1().Foos(foo.Namespace).UpdateStatus(ctx, foo, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			klog.FromContext(ctx).V(4).Info("Foo was deleted during the reconcile")
			s.gone = true
			return nil
		}
		return fmt.Errorf("updating status of Foo %s: %w", klog.KObj(foo), err)
	}
	s.changed = true
	return nil
}

// setReadyFromDeployment derives the Ready condition from the Deployment.
func setReadyFromDeployment(s *syncState, d *appsv1.Deployment) {
	want := desiredReplicas(s.foo)
	available := d.Status.AvailableReplicas
	current := d.Generation <= d.Status.ObservedGeneration && d.Status.UpdatedReplicas >= want
	if current && available >= want {
		setReady(s, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady,
			fmt.Sprintf("Deployment %q has %d of %d replicas available", d.Name, available, want))
		return
	}
	setReady(s, metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady,
		fmt.Sprintf("Deployment %q has %d of %d replicas available", d.Name, available, want))
}

func setReady(s *syncState, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.status.Conditions, metav1.Condition{
		Type:               samplev1alpha1.ConditionReady,
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: s.foo.Generation,
	})
}

func desiredReplicas(foo *samplev1alpha1.Foo) int32 {
	if foo.Spec.Replicas == nil {
		return samplev1alpha1.DefaultReplicas
	}
	return *foo.Spec.Replicas
}

// deploymentLabels are the labels of the Deployment's selector and pods.
func deploymentLabels(foo *samplev1alpha1.Foo) map[string]string {
	return map[string]string{"app": "nginx", "controller": foo.Name}
}

// nginxContainer is the pod's only container.
func nginxContainer() corev1.Container {
	return corev1.Container{Name: "nginx", Image: "nginx:latest"}
}

// newDeployment returns the Deployment a Foo asks for, controlled by the Foo.
func newDeployment(foo *samplev1alpha1.Foo) *appsv1.Deployment {
	labels := deploymentLabels(foo)
	replicas := desiredReplicas(foo)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      foo.Spec.DeploymentName,
			Namespace: foo.Namespace,
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(foo, samplev1alpha1.SchemeGroupVersion.WithKind("Foo")),
			},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{nginxContainer()}},
			},
		},
	}
}

// correctDeployment compares the fields the controller owns (replicas, its
// pod labels, and its own container, found by name: its image) and returns a
// corrected copy when any of them drifted. A missing container of its own is
// added after the others. Everything else, including containers others
// added (a sidecar injected by a policy or by kubectl edit), annotations and
// fields the API server defaults, is left alone, so a matching Deployment is
// never rewritten.
func correctDeployment(existing *appsv1.Deployment, foo *samplev1alpha1.Foo) (*appsv1.Deployment, bool) {
	d := existing.DeepCopy()
	drifted := false
	if want := desiredReplicas(foo); d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		d.Spec.Replicas = &want
		drifted = true
	}
	for k, v := range deploymentLabels(foo) {
		if d.Spec.Template.Labels[k] != v {
			if d.Spec.Template.Labels == nil {
				d.Spec.Template.Labels = map[string]string{}
			}
			d.Spec.Template.Labels[k] = v
			drifted = true
		}
	}
	want := nginxContainer()
	containers := d.Spec.Template.Spec.Containers
	switch i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == want.Name }); {
	case i < 0:
		d.Spec.Template.Spec.Containers = append(containers, want)
		drifted = true
	case containers[i].Image != want.Image:
		containers[i].Image = want.Image
		drifted = true
	}
	return d, drifted
}

// Index names. Deployments are filed under the UID of their controller, to
// find the Deployments a Foo controls without scanning the namespace; Foos
// under the namespace/name of the Deployment they want, to find the Foos
// that a Deployment's appearance, change or removal concerns.
const (
	controllerUIDIndex    = "ctrlkit.foo/controller-uid"
	deploymentNameIndex   = "ctrlkit.foo/deployment-name"
	indexRegistrationHint = "call NewController before starting the informers"
)

func controllerUID(d *appsv1.Deployment) []string {
	if ref := metav1.GetControllerOfNoCopy(d); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

func wantedDeployment(foo *samplev1alpha1.Foo) []string {
	return []string{cache.ObjectName{Namespace: foo.Namespace, Name: foo.Spec.DeploymentName}.String()}
}
