package informer_test

import (
	"context"
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
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

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
	onlyWeb := informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web")))

	tests := []struct {
		name    string
		opts    []informer.Option
		deliver func(h typedHandler)
		want    []string
	}{
		{name: "initial list add is low priority", deliver: func(h typedHandler) { h.OnAdd(a, true) }, want: []string{"-ns/a"}},
		{name: "later add", deliver: func(h typedHandler) { h.OnAdd(a, false) }, want: []string{"+ns/a"}},
		{name: "add without namespace", deliver: func(h typedHandler) { h.OnAdd(cluster, false) }, want: []string{"+c"}},
		{name: "change", deliver: func(h typedHandler) { h.OnUpdate(a, a2) }, want: []string{"+ns/a"}},
		{name: "resync is low priority", deliver: func(h typedHandler) { h.OnUpdate(a, a) }, want: []string{"-ns/a"}},
		{name: "update without resource version", deliver: func(h typedHandler) { h.OnUpdate(noRV, noRV) }, want: []string{"+ns/a"}},
		{name: "resync dropped by ResourceVersionChanged", opts: []informer.Option{informer.WithPredicates(informer.ResourceVersionChanged())},
			deliver: func(h typedHandler) { h.OnUpdate(a, a) }},
		{name: "filtered initial add", opts: []informer.Option{informer.WithPredicates(informer.Or())},
			deliver: func(h typedHandler) { h.OnAdd(a, true) }},
		{name: "delete", deliver: func(h typedHandler) { h.OnDelete(deleted(b)) }, want: []string{"+ns/b"}},
		{name: "delete of a cluster-scoped object", deliver: func(h typedHandler) { h.OnDelete(deleted(cluster)) }, want: []string{"+c"}},
		{name: "delete with unknown final state", deliver: func(h typedHandler) { h.OnDelete(unknown("ns/b", b)) }, want: []string{"+ns/b"}},
		{name: "delete filtered on the last known state", opts: []informer.Option{onlyWeb},
			deliver: func(h typedHandler) { h.OnDelete(unknown("ns/b", b)) }},
		{name: "delete passing the filter on the last known state", opts: []informer.Option{onlyWeb},
			deliver: func(h typedHandler) { h.OnDelete(unknown("ns/a", a)) }, want: []string{"+ns/a"}},
		{name: "delete without object enqueues its key", opts: []informer.Option{onlyWeb},
			deliver: func(h typedHandler) { h.OnDelete(unknown[*appsv1.Deployment]("ns/gone", nil)) }, want: []string{"+ns/gone"}},
		{name: "delete without object of a cluster-scoped object",
			deliver: func(h typedHandler) { h.OnDelete(unknown[*appsv1.Deployment]("gone", nil)) }, want: []string{"+gone"}},
		{name: "delete whose tombstone holds a nil pointer enqueues its key", opts: []informer.Option{onlyWeb},
			deliver: func(h typedHandler) {
				h.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
					FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: (*appsv1.Deployment)(nil)},
				})
			}, want: []string{"+ns/gone"}},
		// client-go splits a malformed key at its first slash.
		{name: "delete without object and with a malformed key",
			deliver: func(h typedHandler) { h.OnDelete(unknown[*appsv1.Deployment]("a/b/c", nil)) }, want: []string{"+a/b/c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &keyLog[cache.ObjectName]{}
			h := informer.EnqueueHandler[*appsv1.Deployment](q, append([]informer.Option{nil}, tt.opts...)...)
			require.NotPanics(t, func() { tt.deliver(h) })
			assert.Equal(t, tt.want, q.got)
		})
	}
}

// A delete the informer noticed only on a relist, without any state of the
// object, is still enqueued, by the key of its tombstone and at normal
// priority, and no predicate is asked about it: there is nothing to judge.
func TestEnqueueHandlerDeleteWithoutObject(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want cache.ObjectName
	}{
		{name: "namespaced", key: "ns/gone", want: cache.ObjectName{Namespace: "ns", Name: "gone"}},
		{name: "cluster-scoped", key: "gone", want: cache.ObjectName{Name: "gone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			rejectAll := informer.PredicateFuncs{
				AddFunc:    func(metav1.Object) bool { asked = append(asked, "add"); return false },
				UpdateFunc: func(_, _ metav1.Object) bool { asked = append(asked, "update"); return false },
				DeleteFunc: func(metav1.Object) bool { asked = append(asked, "delete"); return false },
			}
			q := &lanes{}
			h := informer.EnqueueHandler[*appsv1.Deployment](q, informer.WithPredicates(rejectAll))

			h.OnDelete(unknown[*appsv1.Deployment](tt.key, nil))
			assert.Equal(t, []cache.ObjectName{tt.want}, q.fresh)
			assert.Empty(t, q.low)
			assert.Empty(t, asked, "predicates are not consulted for a delete without object")

			// With an object, the same delete is judged and rejected.
			h.OnDelete(unknown(tt.key, deployment(tt.want.Namespace, tt.want.Name)))
			assert.Equal(t, []string{"delete"}, asked)
			assert.Equal(t, []cache.ObjectName{tt.want}, q.fresh, "the rejected delete is not enqueued")
		})
	}
}

// lanes is an informer.Queue that keeps keys by priority.
type lanes struct{ fresh, low []cache.ObjectName }

func (l *lanes) Add(k cache.ObjectName)            { l.fresh = append(l.fresh, k) }
func (l *lanes) AddLowPriority(k cache.ObjectName) { l.low = append(l.low, k) }

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
		opts    []informer.Option
		deliver func(h typedHandler)
		want    []string
	}{
		{
			name: "add",
			deliver: func(h typedHandler) {
				h.OnAdd(deployment("ns", "a", withLabels("team", "x", "app", "y")), false)
			},
			want: []string{"+x", "+y"},
		},
		{
			name: "initial list add",
			deliver: func(h typedHandler) {
				h.OnAdd(deployment("ns", "a", withLabels("team", "x", "app", "y")), true)
			},
			want: []string{"-x", "-y"},
		},
		{
			name:    "add without keys",
			deliver: func(h typedHandler) { h.OnAdd(deployment("ns", "a"), false) },
		},
		{
			name: "update with same keys enqueues each once",
			deliver: func(h typedHandler) {
				h.OnUpdate(deployment("ns", "a", withLabels("team", "x")), deployment("ns", "a", withLabels("team", "x")))
			},
			want: []string{"+x"},
		},
		{
			name: "resync",
			deliver: func(h typedHandler) {
				d := deployment("ns", "a", withLabels("team", "x"), withRV("7"))
				h.OnUpdate(d, d)
			},
			want: []string{"-x"},
		},
		{
			name: "update with changed keys enqueues new then old",
			deliver: func(h typedHandler) {
				h.OnUpdate(deployment("ns", "a", withLabels("team", "x", "app", "y")), deployment("ns", "a", withLabels("team", "z", "app", "y")))
			},
			want: []string{"+z", "+y", "+x"},
		},
		{
			name: "update losing its keys enqueues old",
			deliver: func(h typedHandler) {
				h.OnUpdate(deployment("ns", "a", withLabels("team", "x")), deployment("ns", "a"))
			},
			want: []string{"+x"},
		},
		{
			name: "delete",
			deliver: func(h typedHandler) {
				h.OnDelete(deleted(deployment("ns", "a", withLabels("team", "x"))))
			},
			want: []string{"+x"},
		},
		{
			name: "delete with unknown final state maps the last known state",
			deliver: func(h typedHandler) {
				h.OnDelete(unknown("ns/a", deployment("ns", "a", withLabels("app", "y"))))
			},
			want: []string{"+y"},
		},
		{
			name:    "delete without object enqueues nothing",
			deliver: func(h typedHandler) { h.OnDelete(unknown[*appsv1.Deployment]("ns/a", nil)) },
		},
		{
			name: "predicates judge the mapped object",
			opts: []informer.Option{informer.WithPredicates(informer.LabelSelector(mustSelector(t, "team=x")))},
			deliver: func(h typedHandler) {
				h.OnAdd(deployment("ns", "a", withLabels("team", "x")), false)
				h.OnAdd(deployment("ns", "b", withLabels("team", "z")), false)
				h.OnDelete(unknown("ns/a", deployment("ns", "a", withLabels("team", "z"))))
			},
			want: []string{"+x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &keyLog[string]{}
			h := informer.EnqueueMappedHandler(keys, q, tt.opts...)
			require.NotPanics(t, func() { tt.deliver(h) })
			assert.Equal(t, tt.want, q.got)
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

// configMapRefs is the values a Deployment is indexed under for the
// ConfigMaps its pods mount.
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
	inf := factory.Apps().V1().Deployments().TypedInformer()
	idx, err := informer.NewIndex(inf, "configmap", configMapRefs)
	require.NoError(t, err)
	again, err := informer.NewIndex(inf, "configmap", configMapRefs)
	require.NoError(t, err, "an index of the same name is shared")
	assert.Equal(t, "configmap", again.Name())

	store := inf.GetTypedIndexer()
	require.NoError(t, store.Add(deployment("ns", "web", withConfigMap("settings"))))
	require.NoError(t, store.Add(deployment("ns", "api", withConfigMap("settings"), withConfigMap("tls"))))
	require.NoError(t, store.Add(deployment("other", "web", withConfigMap("settings"))))
	require.NoError(t, store.Add(deployment("ns", "plain")))

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

	_, err = informer.NewIndex(inf, "", configMapRefs)
	assert.Error(t, err)
	_, err = informer.NewIndex[*appsv1.Deployment](inf, "x", nil)
	assert.Error(t, err)
	_, err = informer.NewIndex[*appsv1.Deployment](nil, "x", configMapRefs)
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
		type cmHandler = cache.TypedResourceEventHandler[*corev1.ConfigMap]
		tests := []struct {
			name    string
			values  func(*corev1.ConfigMap) []string // byRef if nil
			deliver func(h cmHandler)
			want    []string
		}{
			{name: "initial list", deliver: func(h cmHandler) { h.OnAdd(configMap("ns", "tls", "1"), true) }, want: []string{"-ns/api"}},
			{name: "change", deliver: func(h cmHandler) {
				h.OnUpdate(configMap("ns", "tls", "1"), configMap("ns", "tls", "2"))
			}, want: []string{"+ns/api"}},
			{name: "resync", deliver: func(h cmHandler) {
				h.OnUpdate(configMap("ns", "tls", "1"), configMap("ns", "tls", "1"))
			}, want: []string{"-ns/api"}},
			{name: "delete", deliver: func(h cmHandler) {
				h.OnDelete(deleted(configMap("other", "settings", "3")))
			}, want: []string{"+other/web"}},
			{name: "delete with unknown final state", deliver: func(h cmHandler) {
				h.OnDelete(unknown("other/settings", configMap("other", "settings", "3")))
			}, want: []string{"+other/web"}},
			{name: "delete without object enqueues nothing", deliver: func(h cmHandler) {
				h.OnDelete(unknown[*corev1.ConfigMap]("other/settings", nil))
			}},
			{name: "nobody refers to it", deliver: func(h cmHandler) { h.OnAdd(configMap("ns", "unused", "1"), false) }},
			// api mounts both settings and tls, web only settings.
			{name: "a referrer under several values is enqueued once", values: withAliases,
				deliver: func(h cmHandler) { h.OnAdd(aliased("1"), false) }, want: []string{"+ns/api", "+ns/web"}},
			{name: "a referrer under several values of both sides is enqueued once", values: withAliases,
				deliver: func(h cmHandler) { h.OnUpdate(aliased("1"), aliased("2")) }, want: []string{"+ns/api", "+ns/web"}},
			{name: "a referrer under several values is enqueued once on delete", values: withAliases,
				deliver: func(h cmHandler) { h.OnDelete(unknown("ns/tls", aliased("3"))) }, want: []string{"+ns/api", "+ns/web"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				values := tt.values
				if values == nil {
					values = byRef
				}
				q := &keyLog[cache.ObjectName]{}
				h := informer.EnqueueByIndex(idx, values, q)
				require.NotPanics(t, func() { tt.deliver(h) })
				assert.Equal(t, tt.want, q.got)
			})
		}
	})
}

// A lookup that fails is reported to the logger of the WithContext context
// (through utilruntime.HandleErrorWithContext); the other values of the
// object are still looked up.
func TestEnqueueByIndexReportsLookupErrors(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)

	inf := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Apps().V1().Deployments().TypedInformer()
	idx, err := informer.NewIndex(inf, "configmap", configMapRefs)
	require.NoError(t, err)
	// A name with a slash makes a cache key that is no namespace/name:
	// looking up the value it is filed under fails.
	require.NoError(t, inf.GetTypedIndexer().Add(deployment("ns", "bad/name", withConfigMap("broken"))))
	require.NoError(t, inf.GetTypedIndexer().Add(deployment("ns", "web", withConfigMap("settings"))))

	values := func(cm *corev1.ConfigMap) []string { return []string{"ns/broken", "ns/settings"} }
	q := &keyLog[cache.ObjectName]{}
	h := informer.EnqueueByIndex(idx, values, q, informer.WithContext(ctx))
	h.OnAdd(configMap("ns", "any", "1"), false)

	assert.Equal(t, []string{"+ns/web"}, q.got)
	underlier, ok := logger.GetSink().(ktesting.Underlier)
	require.True(t, ok)
	var reports []ktesting.LogEntry
	for _, e := range underlier.GetBuffer().Data() {
		if e.Type == ktesting.LogError {
			reports = append(reports, e)
		}
	}
	require.Len(t, reports, 1, "one report for the failed lookup, on the context's logger")
	assert.Error(t, reports[0].Err)
	assert.Contains(t, reports[0].Err.Error(), `index "configmap"`)
	assert.Equal(t, []any{"index", "configmap", "value", "ns/broken"}, reports[0].ParameterKVList)
}
