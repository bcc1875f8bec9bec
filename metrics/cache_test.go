package metrics_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
)

func sizedDeployment(i int) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "default", UID: "uid",
			Labels:        map[string]string{"app": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: make([]byte, 2000)}}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest",
				Args: []string{"--port=8080", "--verbose"}, Env: []corev1.EnvVar{{Name: "MODE", Value: "production"}}}}}}},
	}
}

// The cache series count the objects an informer holds and their memory,
// which falls with what a transform drops, and go back to zero when the
// objects go.
func TestCacheSize(t *testing.T) {
	const n = 20
	transforms := []struct {
		name  string
		setUp func(inf cache.SharedIndexInformer) error
	}{
		{name: "full", setUp: func(cache.SharedIndexInformer) error { return nil }},
		{name: "stripped", setUp: func(inf cache.SharedIndexInformer) error { return inf.SetTransform(informer.StripManagedFields) }},
		{name: "trimmed", setUp: func(inf cache.SharedIndexInformer) error {
			return informer.Trim[*appsv1.Deployment](inf, "spec.replicas", "spec.template.spec.containers.image")
		}},
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	bytes := map[string]float64{}
	for _, tr := range transforms {
		t.Run(tr.name, func(t *testing.T) {
			var objs []runtime.Object
			for i := range n {
				objs = append(objs, sizedDeployment(i))
			}
			client := fake.NewClientset(objs...)
			factory := informers.NewSharedInformerFactory(client, 0)
			inf := factory.Apps().V1().Deployments().Informer()
			require.NoError(t, tr.setUp(inf))
			require.NoError(t, m.CacheSize(tr.name, inf))
			ctx, cancel := context.WithCancel(t.Context())
			defer func() { cancel(); factory.Shutdown() }()
			factory.Start(ctx.Done())
			require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))

			labels := map[string]string{"informer": tr.name}
			series := func() (float64, float64) {
				return metricstest.Value(t, reg, "ctrlkit_informer_cache_objects", labels), metricstest.Value(t, reg, "ctrlkit_informer_cache_bytes", labels)
			}
			waitFor := func(want float64) {
				t.Helper()
				require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
					objects, _ := series()
					return objects == want, nil
				}), "ctrlkit_informer_cache_objects never reached %v", want)
			}
			waitFor(n)
			_, b := series()
			bytes[tr.name] = b

			// An update that grows an object adds to the bytes.
			d := sizedDeployment(0)
			d.Annotations = map[string]string{"note": string(make([]byte, 8192))}
			_, err := client.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			if tr.name != "trimmed" { // the trim keeps no annotations
				require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
					_, grown := series()
					return grown >= b+4096, nil // the fake's own managedFields may be smaller than the 2000 bytes given
				}))
			}
			for i := range n {
				require.NoError(t, client.AppsV1().Deployments("default").Delete(ctx, fmt.Sprintf("web-%d", i), metav1.DeleteOptions{}))
			}
			waitFor(0)
			_, left := series()
			assert.Zero(t, left, "the bytes of deleted objects are taken away again")
		})
	}
	assert.Less(t, bytes["stripped"], bytes["full"]-n*2000, "the managedFields' bytes are counted")
	assert.Less(t, bytes["trimmed"], bytes["stripped"]-n*100, "the trimmed fields' bytes are not counted")
}

// The approximate size is near what a deep copy of the object allocates.
func TestCacheSizeNearAllocation(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	client := fake.NewClientset(sizedDeployment(0))
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Apps().V1().Deployments().Informer()
	require.NoError(t, m.CacheSize("d", inf))
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return metricstest.Value(t, reg, "ctrlkit_informer_cache_objects", map[string]string{"informer": "d"}) == 1, nil
	}))
	approx := metricstest.Value(t, reg, "ctrlkit_informer_cache_bytes", map[string]string{"informer": "d"})

	// The informers are idle: what is allocated meanwhile is the copies'.
	d := sizedDeployment(0)
	const copies = 1000
	kept := make([]*appsv1.Deployment, copies)
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for i := range kept {
		kept[i] = d.DeepCopy()
	}
	goruntime.ReadMemStats(&after)
	allocated := (after.TotalAlloc - before.TotalAlloc) / copies
	assert.InDelta(t, float64(allocated), approx, float64(allocated)/4, "approximate %v bytes, a deep copy allocates %d", approx, allocated)
}
