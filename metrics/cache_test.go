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

// configMaps are n ConfigMaps in namespace ns.
func configMaps(ns string, n int) []runtime.Object {
	var objs []runtime.Object
	for i := range n {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("c", i)}})
	}
	return objs
}

// startedConfigMaps starts the ConfigMap informer of a factory of client,
// of namespace ns ("" for all), and waits for it to sync; stop stops it.
func startedConfigMaps(t *testing.T, client *fake.Clientset, ns string) (inf cache.SharedIndexInformer, stop func()) {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf = factory.Core().V1().ConfigMaps().Informer()
	ctx, cancel := context.WithCancel(t.Context())
	stop = func() { cancel(); factory.Shutdown() }
	t.Cleanup(stop)
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
	return inf, stop
}

// cacheEnv are two Recorders of one registry and two started ConfigMap
// informers of one clientset: one of namespace a, which holds 2, and one of
// all namespaces, which holds 5.
type cacheEnv struct {
	reg            *prometheus.Registry
	m, other       *metrics.Recorder
	namespace, all cache.SharedIndexInformer
	stopNamespace  func()
}

// waitObjects waits until ctrlkit_informer_cache_objects of name is n.
func (e cacheEnv) waitObjects(t *testing.T, name string, n float64) {
	t.Helper()
	labels := map[string]string{"informer": name}
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got, err := metricstest.Lookup(e.reg, "ctrlkit_informer_cache_objects", labels)
		return err == nil && got == n, nil
	}), "ctrlkit_informer_cache_objects{informer=%q} never reached %v", name, n)
}

// Regression test: two informers of one type, a namespace's and the
// cluster's, counted under one name shared one series, which showed the
// informer of the last event. Each name now counts one running informer's
// cache: a second running informer is refused the name, and takes it over
// once the first has stopped.
func TestCacheSizeOneSeriesPerInformer(t *testing.T) {
	tests := []struct {
		name string
		// count registers the informers and returns the error of the
		// last registration.
		count      func(t *testing.T, e cacheEnv) error
		want       map[string]float64 // objects by name, afterwards
		wantErrIs  error
		wantErrMsg string
	}{
		{
			name: "each under its own name",
			count: func(t *testing.T, e cacheEnv) error {
				require.NoError(t, e.m.CacheSize("configmaps", e.namespace))
				return e.m.CacheSize("configmaps-all", e.all)
			},
			want: map[string]float64{"configmaps": 2, "configmaps-all": 5},
		},
		{
			name: "the second under the same name",
			count: func(t *testing.T, e cacheEnv) error {
				require.NoError(t, e.m.CacheSize("configmaps", e.namespace))
				return e.m.CacheSize("configmaps", e.all)
			},
			want:       map[string]float64{"configmaps": 2},
			wantErrIs:  metrics.ErrCacheNameTaken,
			wantErrMsg: `metrics: counting the cache of "configmaps": the name already counts the cache of a running informer; give each informer a name of its own`,
		},
		{
			name: "the second under the same name on another Recorder of the registry",
			count: func(t *testing.T, e cacheEnv) error {
				require.NoError(t, e.m.CacheSize("configmaps", e.namespace))
				return e.other.CacheSize("configmaps", e.all)
			},
			want:      map[string]float64{"configmaps": 2},
			wantErrIs: metrics.ErrCacheNameTaken,
		},
		{
			name: "one informer twice under one name",
			count: func(t *testing.T, e cacheEnv) error {
				require.NoError(t, e.m.CacheSize("configmaps", e.namespace))
				return e.m.CacheSize("configmaps", e.namespace)
			},
			want:      map[string]float64{"configmaps": 2},
			wantErrIs: metrics.ErrCacheNameTaken,
		},
		{
			name: "the name of a stopped informer",
			count: func(t *testing.T, e cacheEnv) error {
				require.NoError(t, e.m.CacheSize("configmaps", e.namespace))
				e.waitObjects(t, "configmaps", 2)
				e.stopNamespace()
				require.True(t, e.namespace.IsStopped())
				return e.m.CacheSize("configmaps", e.all)
			},
			want: map[string]float64{"configmaps": 5},
		},
		{
			name: "the name of a stopped informer, for a stopped informer",
			count: func(t *testing.T, e cacheEnv) error {
				require.NoError(t, e.m.CacheSize("configmaps", e.namespace))
				e.waitObjects(t, "configmaps", 2)
				e.stopNamespace()
				return e.m.CacheSize("configmaps", e.namespace)
			},
			want:       map[string]float64{"configmaps": 2}, // the last count stays
			wantErrMsg: `metrics: counting the cache of "configmaps": `,
		},
		{
			name: "a new name for a stopped informer",
			count: func(t *testing.T, e cacheEnv) error {
				e.stopNamespace()
				return e.m.CacheSize("configmaps", e.namespace)
			},
			wantErrMsg: `metrics: counting the cache of "configmaps": `,
		},
		{
			name: "no informer",
			count: func(t *testing.T, e cacheEnv) error {
				return e.m.CacheSize("configmaps", nil)
			},
			wantErrMsg: `metrics: counting the cache of "configmaps": the informer is nil`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(append(configMaps("a", 2), configMaps("b", 3)...)...)
			e := cacheEnv{reg: prometheus.NewRegistry()}
			e.namespace, e.stopNamespace = startedConfigMaps(t, client, "a")
			e.all, _ = startedConfigMaps(t, client, "")
			var err error
			e.m, err = metrics.New(e.reg)
			require.NoError(t, err)
			e.other, err = metrics.New(e.reg)
			require.NoError(t, err)

			err = tt.count(t, e)
			if tt.wantErrIs == nil && tt.wantErrMsg == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				if tt.wantErrIs != nil {
					assert.ErrorIs(t, err, tt.wantErrIs)
				}
				assert.ErrorContains(t, err, tt.wantErrMsg)
			}
			for name, objects := range tt.want {
				e.waitObjects(t, name, objects)
			}
			if tt.want == nil {
				_, err := metricstest.Lookup(e.reg, "ctrlkit_informer_cache_objects", map[string]string{"informer": "configmaps"})
				assert.Error(t, err, "a name that counts nothing has no series")
			}
		})
	}
}
