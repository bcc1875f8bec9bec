package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foolisters "github.com/ctrlkit/ctrlkit/foo/generated/listers/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/owner"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The label of the summaries, which their informer selects.
const (
	managedBy = "app.kubernetes.io/managed-by"
	manager   = "ctrlkit-summary"
)

// summaryName is the name of the summary of the Foo named name.
func summaryName(name string) string { return name + "-summary" }

// summaries keeps one ConfigMap per Foo, in the Foo's namespace and
// controlled by it: the garbage collector deletes it with the Foo, also
// when the Foo CRD is deleted.
type summaries struct {
	kube       kubernetes.Interface
	foos       *optional.Informer[*v1alpha1.Foo]
	configMaps coreinformers.TypedConfigMapInformer
}

// newController returns the controller of the Foos' summaries. Every key
// is a Foo's, so every key needs the Foo API (optional.AllKeys): while the
// CRD is absent no key runs, and a reconcile in flight when it goes is
// cancelled. An edit of a summary brings its Foo back (owner.EnqueueOwner).
func newController(kube kubernetes.Interface, foos *optional.Informer[*v1alpha1.Foo], configMaps coreinformers.TypedConfigMapInformer, opts ...queue.Option) (*queue.Controller[cache.ObjectName], error) {
	s := &summaries{kube: kube, foos: foos, configMaps: configMaps}
	ctrl, err := queue.New("foo-summary", s, opts...)
	if err != nil {
		return nil, err
	}
	err = ctrl.Watch(
		optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName]),
		queue.On(configMaps.TypedInformer(), owner.EnqueueOwner[*corev1.ConfigMap](v1alpha1.SchemeGroupVersion.WithKind("Foo").GroupKind(), ctrl)),
	)
	return ctrl, err
}

// Reconcile makes the summary of the Foo key say what the Foo says.
func (s *summaries) Reconcile(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	inf, served := s.foos.Current()
	if !served {
		return reconcile.Result{}, nil // not run: the key needs the Foo API
	}
	foo, err := foolisters.NewFooLister(inf.GetIndexer()).Foos(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil // the garbage collector deletes its summary
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	want := map[string]string{"deploymentName": foo.Spec.DeploymentName, "availableReplicas": strconv.Itoa(int(foo.Status.AvailableReplicas))}
	if foo.Spec.Replicas != nil {
		want["replicas"] = strconv.Itoa(int(*foo.Spec.Replicas))
	}
	cm, err := s.configMaps.Lister().ConfigMaps(key.Namespace).Get(summaryName(key.Name))
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: key.Namespace, Name: summaryName(key.Name), Labels: map[string]string{managedBy: manager},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Foo", Name: foo.Name, UID: foo.UID, Controller: ptr.To(true),
				}},
			},
			Data: want,
		}
		_, err = s.kube.CoreV1().ConfigMaps(key.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, s.existing(ctx, key, foo, want)
		}
		return reconcile.Result{}, err
	case err != nil:
		return reconcile.Result{}, err
	case !metav1.IsControlledBy(cm, foo):
		klog.FromContext(ctx).Info("Leaving alone a ConfigMap of a summary's name that the Foo does not control", "configMap", summaryName(key.Name))
		return reconcile.Result{}, nil
	case maps.Equal(cm.Data, want):
		return reconcile.Result{}, nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if _, err := s.kube.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating the summary of %s: %w", key, err)
	}
	return reconcile.Result{}, nil
}

// existing handles a ConfigMap of the summary's name that exists but that
// the cache does not hold (the cache holds the labelled ConfigMaps only):
// a summary created since the cache last heard, whose event brings the
// Foo back; a summary of the Foo that lost its label, labelled again; or
// someone else's ConfigMap, which the Foo does not control, left alone
// (one line logged, not retried: an edit of the Foo tries again).
func (s *summaries) existing(ctx context.Context, key cache.ObjectName, foo *v1alpha1.Foo, want map[string]string) error {
	cm, err := s.kube.CoreV1().ConfigMaps(key.Namespace).Get(ctx, summaryName(key.Name), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the ConfigMap of the summary of %s: %w", key, err)
	}
	switch {
	case !metav1.IsControlledBy(cm, foo):
		klog.FromContext(ctx).Info("Leaving alone a ConfigMap of a summary's name that the Foo does not control", "configMap", summaryName(key.Name))
		return nil
	case cm.Labels[managedBy] == manager:
		return nil // the cache has not seen it yet
	}
	cm = cm.DeepCopy()
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[managedBy] = manager
	cm.Data = want
	if _, err := s.kube.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("labelling the summary of %s: %w", key, err)
	}
	return nil
}
