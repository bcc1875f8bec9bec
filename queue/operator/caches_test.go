package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// Run counts the cache of every informer of its factories, generated
// factories of custom resources included, named after the object type.
func TestCacheMetrics(t *testing.T) {
	var configMaps, foos []runtime.Object
	for i := range 3 {
		configMaps = append(configMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("c", i)}})
	}
	for i := range 2 {
		foos = append(foos, &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("f", i)}})
	}
	kubeInformers := informers.NewSharedInformerFactory(fake.NewClientset(configMaps...), 0)
	kubeInformers.Core().V1().ConfigMaps().Informer()
	fooInformers := fooinformers.NewSharedInformerFactory(foofake.NewClientset(foos...), 0)
	fooInformers.Samplecontroller().V1alpha1().Foos().Informer()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(kubeInformers, fooInformers), operator.WithCacheMetrics(m),
			operator.WithControllers(stub{name: "idle", run: untilDone, synced: true}))
	}()
	for name, want := range map[string]float64{"core/v1.ConfigMap": 3, "samplecontroller/v1alpha1.Foo": 2} {
		require.Eventually(t, func() bool {
			got, err := metricstest.Lookup(reg, "ctrlkit_informer_cache_objects", map[string]string{"informer": name})
			return err == nil && got == want
		}, waitFor, 5*time.Millisecond, "objects in the cache of %s", name)
		assert.Positive(t, metricstest.Value(t, reg, "ctrlkit_informer_cache_bytes", map[string]string{"informer": name}))
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
	}
}

func TestCacheMetricsNeedARecorder(t *testing.T) {
	err := operator.Run(context.Background(), operator.WithCacheMetrics(nil), operator.WithControllers(stub{name: "idle", run: untilDone, synced: true}))
	assert.ErrorContains(t, err, "cache metrics recorder is nil")
}

// Regression test: the informers of one type in two factories, one
// namespace's and the cluster's, were counted in one series, which showed
// the informer of the last event. Each has a series of its own: the first
// factory's informer under the type's name, the next one's under the
// name followed by "#2".
func TestCacheMetricsOfOneTypeInTwoFactories(t *testing.T) {
	var configMaps []runtime.Object
	for i := range 5 {
		ns := "ns"
		if i >= 3 {
			ns = "other"
		}
		configMaps = append(configMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("c", i)}})
	}
	client := fake.NewClientset(configMaps...)
	namespaced := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("ns"))
	namespaced.Core().V1().ConfigMaps().Informer()
	cluster := informers.NewSharedInformerFactory(client, 0)
	cluster.Core().V1().ConfigMaps().Informer()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(namespaced, cluster), operator.WithCacheMetrics(m),
			operator.WithControllers(stub{name: "idle", run: untilDone, synced: true}))
	}()
	tests := []struct {
		informer string
		want     float64
	}{
		{informer: "core/v1.ConfigMap", want: 3},
		{informer: "core/v1.ConfigMap#2", want: 5},
	}
	for _, tt := range tests {
		require.Eventually(t, func() bool {
			got, err := metricstest.Lookup(reg, "ctrlkit_informer_cache_objects", map[string]string{"informer": tt.informer})
			return err == nil && got == tt.want
		}, waitFor, 5*time.Millisecond, "objects in the cache of %s", tt.informer)
	}
	// Both counts hold: neither informer's events move the other's series.
	for _, tt := range tests {
		assert.Equal(t, tt.want, metricstest.Value(t, reg, "ctrlkit_informer_cache_objects", map[string]string{"informer": tt.informer}), tt.informer)
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
	}
}
