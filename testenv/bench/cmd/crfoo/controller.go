package main

import (
	"context"
	"fmt"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

// Index names: Deployments by their controller's UID, Foos by the
// namespace/name of the Deployment they want.
const (
	controllerUIDField  = ".metadata.controller"
	deploymentNameField = ".spec.deploymentName"
	messageExists       = "Resource %q already exists and is not managed by Foo"
)

// FooReconciler keeps each Foo's Deployment and status in line with its spec.
type FooReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	reports  sync.Map // Foo -> the last problem this process reported
}

// SetupWithManager indexes Deployments and Foos and registers the
// controller: For Foos, Owns Deployments, and Watches Deployments by name.
func (r *FooReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	ctx := context.Background()
	err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1.Deployment{}, controllerUIDField, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = mgr.GetFieldIndexer().IndexField(ctx, &samplev1alpha1.Foo{}, deploymentNameField, func(o client.Object) []string {
		return []string{o.(*samplev1alpha1.Foo).Spec.DeploymentName}
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&samplev1alpha1.Foo{}).
		Owns(&appsv1.Deployment{}).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.foosWanting)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// foosWanting maps a Deployment to the Foos that want a Deployment of its name.
func (r *FooReconciler) foosWanting(ctx context.Context, o client.Object) []reconcile.Request {
	var foos samplev1alpha1.FooList
	if err := r.List(ctx, &foos, client.InNamespace(o.GetNamespace()), client.MatchingFields{deploymentNameField: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(foos.Items))
	for _, f := range foos.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: f.Namespace, Name: f.Name}})
	}
	return reqs
}

// Reconcile brings a Foo's Deployment and status in line with its spec.
func (r *FooReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var foo samplev1alpha1.Foo
	if err := r.Get(ctx, req.NamespacedName, &foo); err != nil {
		if apierrors.IsNotFound(err) {
			r.reports.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !foo.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	status := *foo.Status.DeepCopy()
	if errs := samplev1alpha1.ValidateFoo(&foo); len(errs) > 0 {
		return r.refuse(ctx, &foo, &status, samplev1alpha1.ReasonInvalidSpec, errs.ToAggregate().Error())
	}

	changed := false
	var d appsv1.Deployment
	err := r.Get(ctx, types.NamespacedName{Namespace: foo.Namespace, Name: foo.Spec.DeploymentName}, &d)
	switch {
	case apierrors.IsNotFound(err):
		d = *newDeployment(&foo)
		if err := ctrl.SetControllerReference(&foo, &d, r.Scheme); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, &d); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				setReady(&foo, &status, metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady,
					fmt.Sprintf("Creating Deployment %q failed: %v", d.Name, err))
				_, _ = r.writeStatus(ctx, &foo, status)
			}
			return ctrl.Result{}, err
		}
		changed = true
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(&d, &foo):
		return r.refuse(ctx, &foo, &status, samplev1alpha1.ReasonErrResourceExists, fmt.Sprintf(messageExists, d.Name))
	case correct(&d, &foo):
		if err := r.Update(ctx, &d); err != nil {
			return ctrl.Result{}, err
		}
		changed = true
	}

	// Deployments this Foo controls under another name are left over from
	// a rename.
	var owned appsv1.DeploymentList
	if err := r.List(ctx, &owned, client.InNamespace(foo.Namespace), client.MatchingFields{controllerUIDField: string(foo.UID)}); err != nil {
		return ctrl.Result{}, err
	}
	for _, o := range owned.Items {
		if o.Name == foo.Spec.DeploymentName || o.DeletionTimestamp != nil {
			continue
		}
		if err := r.Delete(ctx, &o, client.Preconditions{UID: &o.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		changed = true
	}

	status.AvailableReplicas = d.Status.AvailableReplicas
	setReadyFromDeployment(&foo, &status, &d)
	wrote, err := r.writeStatus(ctx, &foo, status)
	if err != nil || foo.ResourceVersion == "" { // "" : deleted while being reconciled
		return ctrl.Result{}, err
	}
	r.reports.Delete(req.NamespacedName)
	if changed || wrote {
		r.Recorder.Eventf(&foo, nil, corev1.EventTypeNormal, "Synced", "Synced", "Foo synced successfully")
	}
	return ctrl.Result{}, nil
}

// refuse reports a problem of the Foo with a Warning event and Ready=False,
// once per generation and process, and does not retry it.
func (r *FooReconciler) refuse(ctx context.Context, foo *samplev1alpha1.Foo, status *samplev1alpha1.FooStatus, reason, msg string) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(foo)
	report := fmt.Sprintf("%d/%s/%s", foo.Generation, reason, msg)
	cond := meta.FindStatusCondition(status.Conditions, samplev1alpha1.ConditionReady)
	last, ok := r.reports.Load(key)
	if ok && last == report && cond != nil && cond.Reason == reason && cond.Message == msg && cond.ObservedGeneration == foo.Generation {
		return ctrl.Result{}, nil
	}
	r.Recorder.Eventf(foo, nil, corev1.EventTypeWarning, reason, reason, msg)
	setReady(foo, status, metav1.ConditionFalse, reason, msg)
	if _, err := r.writeStatus(ctx, foo, *status); err != nil || foo.ResourceVersion == "" {
		return ctrl.Result{}, err
	}
	r.reports.Store(key, report)
	return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s: %s", reason, msg))
}

// writeStatus updates the status subresource if status differs, and
// reports whether it wrote.
func (r *FooReconciler) writeStatus(ctx context.Context, foo *samplev1alpha1.Foo, status samplev1alpha1.FooStatus) (bool, error) {
	status.ObservedGeneration = foo.Generation
	if equality.Semantic.DeepEqual(status, foo.Status) {
		return false, nil
	}
	foo.Status = status
	if err := r.Status().Update(ctx, foo); apierrors.IsNotFound(err) {
		foo.ResourceVersion = "" // gone: nothing to report or retry
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, nil
}

func setReadyFromDeployment(foo *samplev1alpha1.Foo, status *samplev1alpha1.FooStatus, d *appsv1.Deployment) {
	want := desiredReplicas(foo)
	msg := fmt.Sprintf("Deployment %q has %d of %d replicas available", d.Name, d.Status.AvailableReplicas, want)
	if d.Generation <= d.Status.ObservedGeneration && d.Status.UpdatedReplicas >= want && d.Status.AvailableReplicas >= want {
		setReady(foo, status, metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, msg)
		return
	}
	setReady(foo, status, metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady, msg)
}

func setReady(foo *samplev1alpha1.Foo, status *samplev1alpha1.FooStatus, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: samplev1alpha1.ConditionReady, Status: s, Reason: reason, Message: msg, ObservedGeneration: foo.Generation,
	})
}

func desiredReplicas(foo *samplev1alpha1.Foo) int32 {
	if foo.Spec.Replicas == nil {
		return samplev1alpha1.DefaultReplicas
	}
	return *foo.Spec.Replicas
}

func labelsFor(foo *samplev1alpha1.Foo) map[string]string {
	return map[string]string{"app": "nginx", "controller": foo.Name}
}

func nginx() corev1.Container { return corev1.Container{Name: "nginx", Image: "nginx:latest"} }

// newDeployment returns the Deployment a Foo asks for.
func newDeployment(foo *samplev1alpha1.Foo) *appsv1.Deployment {
	replicas := desiredReplicas(foo)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: foo.Spec.DeploymentName, Namespace: foo.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labelsFor(foo)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labelsFor(foo)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{nginx()}},
			},
		},
	}
}

// correct sets what the controller owns (replicas, its pod labels, its own
// container's image) on d and reports whether anything drifted.
func correct(d *appsv1.Deployment, foo *samplev1alpha1.Foo) bool {
	drifted := false
	if want := desiredReplicas(foo); d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		d.Spec.Replicas = &want
		drifted = true
	}
	for k, v := range labelsFor(foo) {
		if d.Spec.Template.Labels[k] != v {
			if d.Spec.Template.Labels == nil {
				d.Spec.Template.Labels = map[string]string{}
			}
			d.Spec.Template.Labels[k] = v
			drifted = true
		}
	}
	containers := d.Spec.Template.Spec.Containers
	switch i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == "nginx" }); {
	case i < 0:
		d.Spec.Template.Spec.Containers = append(containers, nginx())
		drifted = true
	case containers[i].Image != nginx().Image:
		containers[i].Image = nginx().Image
		drifted = true
	}
	return drifted
}
