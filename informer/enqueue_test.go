package informer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// keyLog is an informer.Queue that records "+key" for Add and "-key" for
// AddLowPriority.
type keyLog[K comparable] struct{ got []string }

func (l *keyLog[K]) Add(key K)            { l.got = append(l.got, fmt.Sprint("+", key)) }
func (l *keyLog[K]) AddLowPriority(key K) { l.got = append(l.got, fmt.Sprint("-", key)) }

func TestEnqueueHandler(t *testing.T) {
	a := deployment("ns", "a", withLabels("app", "web"), withRV("1"))
	a2 := deployment("ns", "a", withLabels("app", "web"), withRV("2"))
	b := deployment("ns", "b", withLabels("app", "db"))
	cluster := deployment("", "c", withLabels("app", "web"))
	noRV := deployment("ns", "a")

	tests := []struct {
		name        string
		opts        []informer.Option
		deliver     func(h cache.ResourceEventHandler)
		want        []string
		wantReports int
	}{
		{name: "initial list add is low priority", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, true) }, want: []string{"-ns/a"}},
		{name: "later add", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, false) }, want: []string{"+ns/a"}},
		{name: "add without namespace", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(cluster, false) }, want: []string{"+c"}},
		{name: "change", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a2) }, want: []string{"+ns/a"}},
		{name: "resync is low priority", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a) }, want: []string{"-ns/a"}},
		{name: "update without resource version", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(noRV, noRV) }, want: []string{"+ns/a"}},
		{name: "resync dropped by ResourceVersionChanged", opts: []informer.Option{informer.WithPredicates(informer.ResourceVersionChanged())},
			deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a) }},
		{name: "delete", deliver: func(h cache.ResourceEventHandler) { h.OnDelete(b) }, want: []string{"+ns/b"}},
		{name: "delete tombstone", deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/b", b)) }, want: []string{"+ns/b"}},
		{name: "filtered tombstone", opts: []informer.Option{informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web")))},
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/b", b)) }},
		{name: "tombstone without object enqueues its key",
			opts:    []informer.Option{informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web")))},
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/gone", nil)) }, want: []string{"+ns/gone"}},
		{name: "pointer tombstone without object", deliver: func(h cache.ResourceEventHandler) {
			h.OnDelete(&cache.DeletedFinalStateUnknown{Key: "gone"})
		}, want: []string{"+gone"}},
		{name: "tombstone with a nil pointer enqueues its key",
			opts:    []informer.Option{informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web")))},
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/gone", (*appsv1.Deployment)(nil))) }, want: []string{"+ns/gone"}},
		{name: "pointer tombstone with a nil pointer enqueues its key", deliver: func(h cache.ResourceEventHandler) {
			h.OnDelete(&cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: (*appsv1.Deployment)(nil)})
		}, want: []string{"+ns/gone"}},
		{name: "tombstone with a nil pointer of another type enqueues its key",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/gone", (*corev1.Pod)(nil))) }, want: []string{"+ns/gone"}},
		{name: "tombstone with a nil pointer and a bad key is reported",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("a/b/c", (*appsv1.Deployment)(nil))) }, wantReports: 1},
		{name: "tombstone without object and with a bad key is reported",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("a/b/c", nil)) }, wantReports: 1},
		{name: "tombstone of wrong type", deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/p", pod("ns", "p"))) }, wantReports: 1},
		{name: "filtered initial add", opts: []informer.Option{informer.WithPredicates(informer.Or())},
			deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			q := &keyLog[cache.ObjectName]{}
			opts := append([]informer.Option{informer.WithErrorHandler(r.errorHandler), nil}, tt.opts...)
			h := informer.EnqueueHandler[*appsv1.Deployment](q, opts...)
			tt.deliver(h)
			assert.Equal(t, tt.want, q.got)
			_, reports := r.snapshot()
			assert.Len(t, reports, tt.wantReports)
		})
	}
}

func TestEnqueueMappedHandler(t *testing.T) {
	// Map a Deployment to the values of its "team" and "app" labels.
	keys := func(d *appsv1.Deployment) []string {
		var out []string
		for _, l := range []string{"team", "app"} {
			if v, ok := d.Labels[l]; ok {
				out = append(out, v)
			}
		}
		return out
	}
	tests := []struct {
		name    string
		deliver func(h cache.ResourceEventHandler)
		want    []string
	}{
		{
			name: "add",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnAdd(deployment("ns", "a", withLabels("team", "x", "app", "y")), false)
			},
			want: []string{"+x", "+y"},
		},
		{
			name: "initial list add",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnAdd(deployment("ns", "a", withLabels("team", "x", "app", "y")), true)
			},
			want: []string{"-x", "-y"},
		},
		{
			name:    "add without keys",
			deliver: func(h cache.ResourceEventHandler) { h.OnAdd(deployment("ns", "a"), false) },
		},
		{
			name: "update with same keys enqueues each once",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnUpdate(deployment("ns", "a", withLabels("team", "x")), deployment("ns", "a", withLabels("team", "x")))
			},
			want: []string{"+x"},
		},
		{
			name: "resync",
			deliver: func(h cache.ResourceEventHandler) {
				d := deployment("ns", "a", withLabels("team", "x"), withRV("7"))
				h.OnUpdate(d, d)
			},
			want: []string{"-x"},
		},
		{
			name: "update with changed keys enqueues new then old",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnUpdate(deployment("ns", "a", withLabels("team", "x", "app", "y")), deployment("ns", "a", withLabels("team", "z", "app", "y")))
			},
			want: []string{"+z", "+y", "+x"},
		},
		{
			name: "update losing its keys enqueues old",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnUpdate(deployment("ns", "a", withLabels("team", "x")), deployment("ns", "a"))
			},
			want: []string{"+x"},
		},
		{
			name: "delete tombstone",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnDelete(tombstone("ns/a", deployment("ns", "a", withLabels("app", "y"))))
			},
			want: []string{"+y"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			q := &keyLog[string]{}
			h := informer.EnqueueMappedHandler(keys, q, informer.WithErrorHandler(r.errorHandler))
			tt.deliver(h)
			assert.Equal(t, tt.want, q.got)
			_, reports := r.snapshot()
			assert.Empty(t, reports)
		})
	}
}

func TestQueueFunc(t *testing.T) {
	var got []string
	q := informer.QueueFunc[string](func(k string) { got = append(got, k) })
	h := informer.EnqueueMappedHandler(func(d *appsv1.Deployment) []string { return []string{d.Name} }, q)
	h.OnAdd(deployment("ns", "a"), true)
	h.OnAdd(deployment("ns", "b"), false)
	assert.Equal(t, []string{"a", "b"}, got, "both priorities reach the one function")
}

// configMapRef is the value a Deployment is indexed under for the ConfigMap
// its pods mount.
func configMapRefs(d *appsv1.Deployment) []string {
	var out []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			out = append(out, d.Namespace+"/"+v.ConfigMap.Name)
		}
	}
	return out
}

func withConfigMap(name string) deployOpt {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}},
		})
	}
}

func configMap(ns, name, rv string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name, cm.ResourceVersion = ns, name, rv
	return cm
}

func TestIndex(t *testing.T) {
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	inf := factory.Apps().V1().Deployments().Informer()
	idx, err := informer.NewIndex(inf, "configmap", configMapRefs)
	require.NoError(t, err)
	again, err := informer.NewIndex(inf, "configmap", configMapRefs)
	require.NoError(t, err, "an index of the same name is shared")
	assert.Equal(t, "configmap", again.Name())

	store := inf.GetIndexer()
	require.NoError(t, store.Add(deployment("ns", "web", withConfigMap("settings"))))
	require.NoError(t, store.Add(deployment("ns", "api", withConfigMap("settings"), withConfigMap("tls"))))
	require.NoError(t, store.Add(deployment("other", "web", withConfigMap("settings"))))
	require.NoError(t, store.Add(pod("ns", "stray")))

	keys, err := idx.Keys("ns/settings")
	require.NoError(t, err)
	assert.ElementsMatch(t, []cache.ObjectName{{Namespace: "ns", Name: "web"}, {Namespace: "ns", Name: "api"}}, keys)
	objs, err := again.List("ns/tls")
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "api", objs[0].Name)
	none, err := idx.List("ns/missing")
	require.NoError(t, err)
	assert.Empty(t, none)

	_, err = informer.NewIndex[*appsv1.Deployment](inf, "", configMapRefs)
	assert.Error(t, err)
	_, err = informer.NewIndex[*appsv1.Deployment](inf, "x", nil)
	assert.Error(t, err)

	t.Run("EnqueueByIndex", func(t *testing.T) {
		byRef := informer.KeyOf[*corev1.ConfigMap]
		require.Equal(t, []string{"ns/tls"}, byRef(configMap("ns", "tls", "1")))
		require.Equal(t, []string{"node-a"}, informer.KeyOf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}), "cluster-scoped")
		// withAliases files a ConfigMap also under the names it replaces,
		// so that one referrer can match several of its values.
		withAliases := func(cm *corev1.ConfigMap) []string {
			out := informer.KeyOf(cm)
			for _, alias := range strings.Fields(cm.Annotations["aliases"]) {
				out = append(out, cm.Namespace+"/"+alias)
			}
			return out
		}
		aliased := func(rv string) *corev1.ConfigMap {
			cm := configMap("ns", "tls", rv)
			cm.Annotations = map[string]string{"aliases": "settings tls"}
			return cm
		}
		tests := []struct {
			name    string
			values  func(*corev1.ConfigMap) []string // byRef if nil
			deliver func(h cache.ResourceEventHandler)
			want    []string
		}{
			{name: "initial list", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(configMap("ns", "tls", "1"), true) }, want: []string{"-ns/api"}},
			{name: "change", deliver: func(h cache.ResourceEventHandler) {
				h.OnUpdate(configMap("ns", "tls", "1"), configMap("ns", "tls", "2"))
			}, want: []string{"+ns/api"}},
			{name: "resync", deliver: func(h cache.ResourceEventHandler) {
				h.OnUpdate(configMap("ns", "tls", "1"), configMap("ns", "tls", "1"))
			}, want: []string{"-ns/api"}},
			{name: "delete tombstone", deliver: func(h cache.ResourceEventHandler) {
				h.OnDelete(tombstone("other/settings", configMap("other", "settings", "3")))
			}, want: []string{"+other/web"}},
			{name: "nobody refers to it", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(configMap("ns", "unused", "1"), false) }},
			// api mounts both settings and tls, web only settings.
			{name: "a referrer under several values is enqueued once", values: withAliases,
				deliver: func(h cache.ResourceEventHandler) { h.OnAdd(aliased("1"), false) }, want: []string{"+ns/api", "+ns/web"}},
			{name: "a referrer under several values of both sides is enqueued once", values: withAliases,
				deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(aliased("1"), aliased("2")) }, want: []string{"+ns/api", "+ns/web"}},
			{name: "a referrer under several values is enqueued once on delete", values: withAliases,
				deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/tls", aliased("3"))) }, want: []string{"+ns/api", "+ns/web"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				values := tt.values
				if values == nil {
					values = byRef
				}
				q := &keyLog[cache.ObjectName]{}
				tt.deliver(informer.EnqueueByIndex(idx, values, q))
				assert.Equal(t, tt.want, q.got)
			})
		}
	})
}
