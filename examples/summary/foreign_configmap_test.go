package main

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// Reconcile leaves alone "a ConfigMap of a summary's name that the Foo
// does not control" (its log line) — but only one that carries the
// summaries' label: main caches only the labelled ConfigMaps, so an
// unlabelled ConfigMap of that name (someone else's) is never in the
// cache, and Reconcile creates the summary again and again, each time
// AlreadyExists, logged as a failure and retried with backoff forever.
func TestForeignUnlabelledConfigMapLeftAlone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	web := &v1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
		Spec: v1alpha1.FooSpec{DeploymentName: "web", Replicas: ptr.To[int32](2)}}
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-summary"}, Data: map[string]string{"mine": "yes"}}
	kube := fake.NewClientset(foreign)
	creates := make(chan struct{}, 1000)
	kube.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates <- struct{}{}
		return false, nil, nil
	})
	crds := apiextensionsfake.NewClientset(fooCRD())
	foos := foofake.NewClientset(web)
	apis := optional.NewAPIs(crds, nil)
	fooInformer := optional.NewInformer(apis, v1alpha1.SchemeGroupVersion.WithResource("foos"), func() cache.TypedSharedIndexInformer[*v1alpha1.Foo] {
		return fooinformers.NewSharedInformerFactory(foos, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
	})
	// As main makes it: only the summaries are cached.
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = managedBy + "=" + manager }))
	ctrl, err := newController(kube, fooInformer, factory.Core().V1().ConfigMaps())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(factory, apis), operator.WithControllers(ctrl))
	}()
	t.Cleanup(func() { cancel(); <-done })

	select {
	case <-creates:
	case <-time.After(waitFor):
		t.Fatal("the Foo was never summarized")
	}
	time.Sleep(3 * time.Second)
	require.LessOrEqual(t, len(creates), 1,
		"a ConfigMap of the summary's name that the Foo does not control was not left alone: %d more creates of the summary, each AlreadyExists", len(creates))
}

// A summary the Foo controls that lost the summaries' label is not in
// the cache either: its Create answers AlreadyExists, and it is labelled
// again (and then kept up to date), not left alone nor created again.
func TestUnlabelledSummaryOfTheFooLabelledAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	web := &v1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
		Spec: v1alpha1.FooSpec{DeploymentName: "web", Replicas: ptr.To[int32](2)}}
	unlabelled := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-summary",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Foo", Name: "web", UID: "uid-web", Controller: ptr.To(true)}}}}
	kube := fake.NewClientset(unlabelled)
	apis := optional.NewAPIs(apiextensionsfake.NewClientset(fooCRD()), nil)
	foos := foofake.NewClientset(web)
	fooInformer := optional.NewInformer(apis, v1alpha1.SchemeGroupVersion.WithResource("foos"), func() cache.TypedSharedIndexInformer[*v1alpha1.Foo] {
		return fooinformers.NewSharedInformerFactory(foos, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
	})
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = managedBy + "=" + manager }))
	ctrl, err := newController(kube, fooInformer, factory.Core().V1().ConfigMaps())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(factory, apis), operator.WithControllers(ctrl))
	}()
	t.Cleanup(func() { cancel(); <-done })

	want := map[string]string{"deploymentName": "web", "replicas": "2", "availableReplicas": "0"}
	require.Eventually(t, func() bool {
		cm, err := kube.CoreV1().ConfigMaps("default").Get(context.Background(), "web-summary", metav1.GetOptions{})
		return err == nil && cm.Labels[managedBy] == manager && maps.Equal(cm.Data, want)
	}, waitFor, 10*time.Millisecond, "the Foo's summary without the summaries' label was not labelled again")
}
