package informer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

func settingsMap(name, rv string, kv ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		cm.Labels[kv[i]] = kv[i+1]
	}
	return cm
}

func names(ns string, ns2 ...string) []cache.ObjectName {
	out := make([]cache.ObjectName, 0, len(ns2))
	for _, n := range ns2 {
		out = append(out, cache.ObjectName{Namespace: ns, Name: n})
	}
	return out
}

func TestEnqueueTargets(t *testing.T) {
	// Deployments select the ConfigMaps of their "config" label; a
	// ConfigMap change concerns the Deployments whose label names it.
	byConfig := func(cm *corev1.ConfigMap, d *appsv1.Deployment) bool { return d.Labels["config"] == cm.Name }
	settings := settingsMap("settings", "1")
	settings2 := settingsMap("settings", "2")
	other := settingsMap("other", "3")

	tests := []struct {
		name  string
		match func(*corev1.ConfigMap, *appsv1.Deployment) bool
		opts  []informer.Option
		event func(h cache.TypedResourceEventHandler[*corev1.ConfigMap])
		add   []cache.ObjectName
		low   []cache.ObjectName
	}{
		{name: "add enqueues every target", event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) { h.OnAdd(settings, false) },
			add: names("ns", "a", "b", "c")},
		{name: "initial list at low priority", event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) { h.OnAdd(settings, true) },
			low: names("ns", "a", "b", "c")},
		{name: "add enqueues the matching targets", match: byConfig,
			event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) { h.OnAdd(settings, false) }, add: names("ns", "a", "b")},
		{name: "update enqueues targets of old and new once", match: byConfig,
			event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) { h.OnUpdate(other, settings2) }, add: names("ns", "a", "b", "c")},
		{name: "resync at low priority", match: byConfig,
			event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) { h.OnUpdate(settings, settings) }, low: names("ns", "a", "b")},
		{name: "delete matches the last state", match: byConfig,
			event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) {
				h.OnDelete(cache.DeletedObject[*corev1.ConfigMap]{OptionalObj: other})
			}, add: names("ns", "c")},
		{name: "delete without an object enqueues every target", match: byConfig,
			event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) {
				h.OnDelete(cache.DeletedObject[*corev1.ConfigMap]{FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "ns/settings"}})
			}, add: names("ns", "a", "b", "c")},
		{name: "predicates judge the changed object", match: byConfig, opts: []informer.Option{informer.WithPredicates(informer.LabelPresent("shared"))},
			event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) { h.OnAdd(settings, false) }},
		{name: "predicates pass", opts: []informer.Option{informer.WithPredicates(informer.LabelSelector(labels.Everything()))},
			event: func(h cache.TypedResourceEventHandler[*corev1.ConfigMap]) { h.OnAdd(settings, false) }, add: names("ns", "a", "b", "c")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
			deployments := factory.Apps().V1().Deployments().TypedInformer()
			for _, d := range []*appsv1.Deployment{
				deployment("ns", "a", withLabels("config", "settings")),
				deployment("ns", "b", withLabels("config", "settings")),
				deployment("ns", "c", withLabels("config", "other")),
			} {
				require.NoError(t, deployments.GetStore().Add(d))
			}
			var q lanes
			tt.event(informer.EnqueueTargets(deployments, tt.match, &q, tt.opts...))
			assert.ElementsMatch(t, tt.add, q.fresh, "keys added")
			assert.ElementsMatch(t, tt.low, q.low, "keys added at low priority")
		})
	}
}

// TestEnqueueTargetsThroughInformers fans a ConfigMap created through the
// API out to the Deployments in the cache of a running informer.
func TestEnqueueTargetsThroughInformers(t *testing.T) {
	kube := fake.NewClientset(deployment("ns", "a"), deployment("ns", "b"))
	factory := informers.NewSharedInformerFactory(kube, 0)
	deployments := factory.Apps().V1().Deployments().TypedInformer()
	configMaps := factory.Core().V1().ConfigMaps().TypedInformer()
	var mu sync.Mutex
	got := map[cache.ObjectName]int{}
	_, err := configMaps.AddTypedEventHandler(informer.EnqueueTargets[*corev1.ConfigMap](deployments, nil, informer.QueueFunc[cache.ObjectName](func(k cache.ObjectName) {
		mu.Lock()
		defer mu.Unlock()
		got[k]++
	})))
	require.NoError(t, err)
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	factory.Start(stop)
	require.True(t, cache.WaitForCacheSync(stop, deployments.HasSynced, configMaps.HasSynced))

	_, err = kube.CoreV1().ConfigMaps("ns").Create(context.Background(), settingsMap("settings", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(c, map[cache.ObjectName]int{{Namespace: "ns", Name: "a"}: 1, {Namespace: "ns", Name: "b"}: 1}, got)
	}, 10*time.Second, 10*time.Millisecond)
}
