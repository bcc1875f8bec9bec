package generated_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
)

func newFoo(namespace, name, deployment string, replicas int32) *samplev1alpha1.Foo {
	return &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: samplev1alpha1.FooSpec{
			DeploymentName: deployment,
			Replicas:       &replicas,
		},
	}
}

func TestFakeClientsetCreateGetAndList(t *testing.T) {
	defer goleak.VerifyNone(t)

	tests := []struct {
		name      string
		seed      []runtime.Object
		create    []*samplev1alpha1.Foo
		namespace string
		wantNames []string
	}{
		{
			name:      "created through the client",
			create:    []*samplev1alpha1.Foo{newFoo("default", "example-foo", "example-foo", 1)},
			namespace: "default",
			wantNames: []string{"example-foo"},
		},
		{
			name:      "seeded and created, listed per namespace",
			seed:      []runtime.Object{newFoo("default", "seeded", "seeded", 2), newFoo("other", "elsewhere", "elsewhere", 1)},
			create:    []*samplev1alpha1.Foo{newFoo("default", "created", "created", 3)},
			namespace: "default",
			wantNames: []string{"created", "seeded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			client := fake.NewClientset(tt.seed...)
			foos := client.SamplecontrollerV1alpha1().Foos(tt.namespace)
			for _, foo := range tt.create {
				created, err := foos.Create(ctx, foo, metav1.CreateOptions{})
				require.NoError(t, err)
				assert.Equal(t, foo.Spec, created.Spec)

				got, err := foos.Get(ctx, foo.Name, metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, foo.Spec, got.Spec)
			}

			factory := externalversions.NewSharedInformerFactory(client, 0)
			informer := factory.Samplecontroller().V1alpha1().Foos()
			lister := informer.Lister() // registers the informer before Start
			factory.Start(ctx.Done())
			defer func() { cancel(); factory.Shutdown() }()
			for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
				require.True(t, ok, "cache of %v did not sync", typ)
			}

			listed, err := lister.Foos(tt.namespace).List(labels.Everything())
			require.NoError(t, err)
			var names []string
			for _, foo := range listed {
				names = append(names, foo.Name)
			}
			assert.ElementsMatch(t, tt.wantNames, names)

			for _, foo := range tt.create {
				cached, err := lister.Foos(foo.Namespace).Get(foo.Name)
				require.NoError(t, err)
				assert.Equal(t, foo.Spec, cached.Spec)
			}
		})
	}
}

func TestFakeClientsetInformerSeesLaterWrites(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client := fake.NewClientset()
	factory := externalversions.NewSharedInformerFactory(client, 0)
	lister := factory.Samplecontroller().V1alpha1().Foos().Lister()
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "cache of %v did not sync", typ)
	}

	foos := client.SamplecontrollerV1alpha1().Foos("default")
	_, err := foos.Create(ctx, newFoo("default", "late", "late", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		_, err := lister.Foos("default").Get("late")
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the informer never saw the created Foo")

	status := newFoo("default", "late", "late", 1)
	status.Status = samplev1alpha1.FooStatus{
		AvailableReplicas:  1,
		ObservedGeneration: 1,
		Conditions: []metav1.Condition{{
			Type:   samplev1alpha1.ConditionReady,
			Status: metav1.ConditionTrue,
			Reason: samplev1alpha1.ReasonDeploymentReady,
		}},
	}
	_, err = foos.UpdateStatus(ctx, status, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		cached, err := lister.Foos("default").Get("late")
		return err == nil && cached.Status.AvailableReplicas == 1 &&
			len(cached.Status.Conditions) == 1
	}, 10*time.Second, 10*time.Millisecond, "the informer never saw the status update")
}

// The typed informer of the factory, which foo.NewController and queue.On
// take, is the factory's shared informer seen with its type: it shares the
// untyped informer's cache, and its handlers receive Foos, and deletes as
// cache.DeletedObject of Foos.
func TestTypedInformerDeliversFoos(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client := fake.NewClientset(newFoo("default", "seeded", "seeded", 1))
	factory := externalversions.NewSharedInformerFactory(client, 0)
	foos := factory.Samplecontroller().V1alpha1().Foos()
	typed := foos.TypedInformer()
	assert.Same(t, foos.Informer().GetIndexer(), typed.GetIndexer(), "one cache for both views")
	events := make(chan string, 10)
	_, err := typed.AddTypedEventHandler(cache.TypedResourceEventHandlerDetailedFuncs[*samplev1alpha1.Foo]{
		AddFunc: func(foo *samplev1alpha1.Foo, initial bool) {
			events <- fmt.Sprintf("add %s/%s initial=%t", foo.Namespace, foo.Name, initial)
		},
		UpdateFunc: func(oldFoo, newFoo *samplev1alpha1.Foo) {
			events <- fmt.Sprintf("update %s replicas %d->%d", newFoo.Name, *oldFoo.Spec.Replicas, *newFoo.Spec.Replicas)
		},
		DeleteFunc: func(obj cache.DeletedObject[*samplev1alpha1.Foo]) {
			events <- fmt.Sprintf("delete %s final=%t", obj.GetObjectName(), obj.OptionalObj != nil && obj.FinalStateUnknown == nil)
		},
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "cache of %v did not sync", typ)
	}
	next := func() string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-ctx.Done():
			t.Fatal("no event")
			return ""
		}
	}
	assert.Equal(t, "add default/seeded initial=true", next())

	cached, err := typed.GetTypedIndexer().ByTypedIndex(cache.NamespaceIndex, "default")
	require.NoError(t, err)
	require.Len(t, cached, 1)
	assert.Equal(t, "seeded", cached[0].Spec.DeploymentName, "the typed indexer returns Foos")

	foosClient := client.SamplecontrollerV1alpha1().Foos("default")
	_, err = foosClient.Update(ctx, newFoo("default", "seeded", "seeded", 3), metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "update seeded replicas 1->3", next())
	require.NoError(t, foosClient.Delete(ctx, "seeded", metav1.DeleteOptions{}))
	assert.Equal(t, "delete default/seeded final=true", next())
}
