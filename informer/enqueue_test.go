package informer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

func TestEnqueueHandler(t *testing.T) {
	a := deployment("ns", "a", withLabels("app", "web"))
	b := deployment("ns", "b", withLabels("app", "db"))
	cluster := deployment("", "c", withLabels("app", "web"))

	tests := []struct {
		name    string
		opts    []informer.Option
		deliver func(h cache.ResourceEventHandler)
		want    []cache.ObjectName
	}{
		{
			name:    "add",
			deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, true) },
			want:    []cache.ObjectName{{Namespace: "ns", Name: "a"}},
		},
		{
			name:    "add without namespace",
			deliver: func(h cache.ResourceEventHandler) { h.OnAdd(cluster, false) },
			want:    []cache.ObjectName{{Name: "c"}},
		},
		{
			name:    "update enqueues once",
			deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a) },
			want:    []cache.ObjectName{{Namespace: "ns", Name: "a"}},
		},
		{
			name:    "delete",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(b) },
			want:    []cache.ObjectName{{Namespace: "ns", Name: "b"}},
		},
		{
			name:    "delete tombstone",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/b", b)) },
			want:    []cache.ObjectName{{Namespace: "ns", Name: "b"}},
		},
		{
			name:    "filtered tombstone",
			opts:    []informer.Option{informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web")))},
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/b", b)) },
		},
		{
			name:    "tombstone of wrong type",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/p", pod("ns", "p"))) },
		},
		{
			name:    "skip resync",
			opts:    []informer.Option{informer.SkipUnchangedResync()},
			deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a.DeepCopy()) },
			want:    []cache.ObjectName{{Namespace: "ns", Name: "a"}}, // no resourceVersion: never skipped
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			var got []cache.ObjectName
			opts := append([]informer.Option{informer.WithErrorHandler(r.errorHandler)}, tt.opts...)
			h := informer.EnqueueHandler[*appsv1.Deployment](func(k cache.ObjectName) { got = append(got, k) }, opts...)
			tt.deliver(h)
			assert.Equal(t, tt.want, got)
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
			want: []string{"x", "y"},
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
			want: []string{"x"},
		},
		{
			name: "update with changed keys enqueues new then old",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnUpdate(deployment("ns", "a", withLabels("team", "x", "app", "y")), deployment("ns", "a", withLabels("team", "z", "app", "y")))
			},
			want: []string{"z", "y", "x"},
		},
		{
			name: "update losing its keys enqueues old",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnUpdate(deployment("ns", "a", withLabels("team", "x")), deployment("ns", "a"))
			},
			want: []string{"x"},
		},
		{
			name: "delete tombstone",
			deliver: func(h cache.ResourceEventHandler) {
				h.OnDelete(tombstone("ns/a", deployment("ns", "a", withLabels("app", "y"))))
			},
			want: []string{"y"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			var got []string
			h := informer.EnqueueMappedHandler(keys, func(k string) { got = append(got, k) }, informer.WithErrorHandler(r.errorHandler))
			tt.deliver(h)
			assert.Equal(t, tt.want, got)
			_, reports := r.snapshot()
			assert.Empty(t, reports)
		})
	}
}

func TestPriorityEnqueueHandler(t *testing.T) {
	a := deployment("ns", "a", withRV("1"))
	a2 := deployment("ns", "a", withRV("2"))
	noRV := deployment("ns", "a")
	key := cache.ObjectName{Namespace: "ns", Name: "a"}

	tests := []struct {
		name     string
		opts     []informer.Option
		deliver  func(h cache.ResourceEventHandler)
		wantHigh int
		wantLow  int
	}{
		{name: "initial list add", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, true) }, wantLow: 1},
		{name: "later add", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, false) }, wantHigh: 1},
		{name: "change", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a2) }, wantHigh: 1},
		{name: "resync", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a) }, wantLow: 1},
		{name: "update without resource version", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(noRV, noRV) }, wantHigh: 1},
		{name: "resync skipped", opts: []informer.Option{informer.SkipUnchangedResync()},
			deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a) }},
		{name: "delete tombstone", deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/a", a)) }, wantHigh: 1},
		{name: "filtered initial add", opts: []informer.Option{informer.WithPredicates(informer.Or())},
			deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var high, low []cache.ObjectName
			h := informer.PriorityEnqueueHandler[*appsv1.Deployment](
				func(k cache.ObjectName) { high = append(high, k) },
				func(k cache.ObjectName) { low = append(low, k) },
				tt.opts...)
			tt.deliver(h)
			assert.Len(t, high, tt.wantHigh)
			assert.Len(t, low, tt.wantLow)
			for _, k := range append(high, low...) {
				assert.Equal(t, key, k)
			}
		})
	}
}
