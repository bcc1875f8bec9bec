package informer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// typedHandler is the handler type of the tests on Deployments.
type typedHandler = cache.TypedResourceEventHandler[*appsv1.Deployment]

// Without predicates every event reaches the wrapped handler as it came,
// whatever other (or nil) options are given.
func TestNewHandlerWithoutPredicates(t *testing.T) {
	dep := deployment("ns", "a", withRV("1"))
	dep2 := deployment("ns", "a", withRV("2"))

	optionSets := map[string][]informer.Option{
		"no options":                     nil,
		"nil options":                    {nil, nil},
		"nil predicates and nil context": {informer.WithPredicates(nil, informer.ObjectPredicate(nil)), informer.WithContext(nil)},
		"context only":                   {informer.WithContext(context.Background())},
	}
	tests := []struct {
		name    string
		deliver func(h typedHandler)
		want    call
	}{
		{name: "add from the initial list", deliver: func(h typedHandler) { h.OnAdd(dep, true) },
			want: call{Event: "add", Obj: dep, InitialList: true}},
		{name: "later add", deliver: func(h typedHandler) { h.OnAdd(dep, false) },
			want: call{Event: "add", Obj: dep}},
		{name: "update", deliver: func(h typedHandler) { h.OnUpdate(dep, dep2) },
			want: call{Event: "update", Old: dep, Obj: dep2}},
		{name: "delete", deliver: func(h typedHandler) { h.OnDelete(deleted(dep)) },
			want: call{Event: "delete", Obj: dep, Key: cache.ObjectName{Namespace: "ns", Name: "a"}}},
		{name: "delete with unknown final state", deliver: func(h typedHandler) { h.OnDelete(unknown("ns/a", dep)) },
			want: call{Event: "delete", Obj: dep, Key: cache.ObjectName{Namespace: "ns", Name: "a"}, FinalStateUnknown: true}},
		{name: "delete with unknown final state and no object",
			deliver: func(h typedHandler) { h.OnDelete(unknown[*appsv1.Deployment]("ns/gone", nil)) },
			want:    call{Event: "delete", Key: cache.ObjectName{Namespace: "ns", Name: "gone"}, FinalStateUnknown: true}},
	}
	for setName, opts := range optionSets {
		for _, tt := range tests {
			t.Run(setName+"/"+tt.name, func(t *testing.T) {
				r := &recorder{}
				h := informer.NewHandler[*appsv1.Deployment](r.handler(), opts...)
				require.NotNil(t, h)
				tt.deliver(h)
				assert.Equal(t, []call{tt.want}, r.snapshot())
			})
		}
	}
}

// Predicates judge the object a delete carries, the last state the
// informer knew, and the handler gets the delete unchanged, tombstone
// included.
func TestHandlerPredicatesSeeTheLastKnownState(t *testing.T) {
	dep := deployment("ns", "a", withLabels("app", "web"))
	var seen []metav1.Object
	spy := informer.PredicateFuncs{
		AddFunc:    func(obj metav1.Object) bool { seen = append(seen, obj); return true },
		UpdateFunc: func(o, n metav1.Object) bool { seen = append(seen, o, n); return true },
		DeleteFunc: func(obj metav1.Object) bool { seen = append(seen, obj); return true },
	}
	var got []cache.DeletedObject[*appsv1.Deployment]
	h := informer.NewHandler[*appsv1.Deployment](cache.TypedResourceEventHandlerFuncs[*appsv1.Deployment]{
		DeleteFunc: func(obj cache.DeletedObject[*appsv1.Deployment]) { got = append(got, obj) },
	}, informer.WithPredicates(spy, informer.LabelSelector(mustSelector(t, "app=web"))))

	plain := deleted(dep)
	stale := unknown("ns/a", dep)
	h.OnDelete(plain)
	h.OnDelete(stale)

	require.Len(t, seen, 2)
	for _, s := range seen {
		assert.Same(t, dep, s, "predicates judge the deleted object itself")
	}
	require.Len(t, got, 2)
	assert.Equal(t, plain, got[0])
	assert.Nil(t, got[0].FinalStateUnknown)
	assert.Same(t, stale.FinalStateUnknown, got[1].FinalStateUnknown, "the tombstone reaches the handler")
	assert.Same(t, dep, got[1].OptionalObj)
}

// A delete whose final state is unknown and that carries no object cannot
// be judged: it reaches the handler without any predicate being asked, even
// predicates that reject everything.
func TestHandlerDeleteWithoutObjectIsNotJudged(t *testing.T) {
	tests := []struct {
		name    string
		obj     cache.DeletedObject[*appsv1.Deployment]
		wantKey cache.ObjectName
	}{
		{name: "tombstone without object", obj: unknown[*appsv1.Deployment]("ns/gone", nil),
			wantKey: cache.ObjectName{Namespace: "ns", Name: "gone"}},
		{name: "tombstone with a nil pointer", obj: cache.DeletedObject[*appsv1.Deployment]{
			FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: (*appsv1.Deployment)(nil)},
		}, wantKey: cache.ObjectName{Namespace: "ns", Name: "gone"}},
		{name: "cluster-scoped", obj: unknown[*appsv1.Deployment]("gone", nil),
			wantKey: cache.ObjectName{Name: "gone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := 0
			rejectAll := informer.PredicateFuncs{
				AddFunc:    func(metav1.Object) bool { asked++; return false },
				UpdateFunc: func(_, _ metav1.Object) bool { asked++; return false },
				DeleteFunc: func(metav1.Object) bool { asked++; return false },
			}
			r := &recorder{}
			h := informer.NewHandler[*appsv1.Deployment](r.handler(), informer.WithPredicates(rejectAll, informer.Or()))
			require.NotPanics(t, func() { h.OnDelete(tt.obj) })
			assert.Zero(t, asked, "no predicate is asked about a delete without object")
			assert.Equal(t, []call{{Event: "delete", Key: tt.wantKey, FinalStateUnknown: true}}, r.snapshot())

			// The same predicates do filter everything else.
			h.OnAdd(deployment("ns", "a"), false)
			h.OnDelete(unknown("ns/a", deployment("ns", "a")))
			assert.NotZero(t, asked, "the predicates judge deletes with an object")
			assert.Len(t, r.snapshot(), 1, "and reject them")
		})
	}
}

func TestHandlerPredicates(t *testing.T) {
	web := deployment("ns", "a", withLabels("app", "web"), withGeneration(1), withRV("1"))
	webGen2 := deployment("ns", "a", withLabels("app", "web"), withGeneration(2), withRV("2"))
	webStatus := deployment("ns", "a", withLabels("app", "web"), withGeneration(1), withRV("3"))
	db := deployment("ns", "a", withLabels("app", "db"), withGeneration(2), withRV("4"))
	gone := unknown[*appsv1.Deployment]("ns/a", nil)

	type event struct {
		name     string
		deliver  func(h typedHandler)
		wantCall bool
	}
	tests := []struct {
		name   string
		opts   []informer.Option
		events []event
	}{
		{
			name: "label selector",
			opts: []informer.Option{informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web")))},
			events: []event{
				{"add matching", func(h typedHandler) { h.OnAdd(web, false) }, true},
				{"add other", func(h typedHandler) { h.OnAdd(db, false) }, false},
				{"update leaving selection", func(h typedHandler) { h.OnUpdate(web, db) }, true},
				{"update entering selection", func(h typedHandler) { h.OnUpdate(db, web) }, true},
				{"update outside", func(h typedHandler) { h.OnUpdate(db, db) }, false},
				{"delete matching", func(h typedHandler) { h.OnDelete(deleted(web)) }, true},
				{"delete other", func(h typedHandler) { h.OnDelete(deleted(db)) }, false},
				{"delete with unknown final state, last known matching", func(h typedHandler) { h.OnDelete(unknown("ns/a", web)) }, true},
				{"delete with unknown final state, last known other", func(h typedHandler) { h.OnDelete(unknown("ns/a", db)) }, false},
				{"delete with unknown final state and no object", func(h typedHandler) { h.OnDelete(gone) }, true},
			},
		},
		{
			name: "generation changed",
			opts: []informer.Option{informer.WithPredicates(informer.GenerationChanged())},
			events: []event{
				{"add", func(h typedHandler) { h.OnAdd(web, false) }, true},
				{"spec change", func(h typedHandler) { h.OnUpdate(web, webGen2) }, true},
				{"status change", func(h typedHandler) { h.OnUpdate(web, webStatus) }, false},
				{"delete", func(h typedHandler) { h.OnDelete(deleted(web)) }, true},
			},
		},
		{
			name: "resource version changed",
			opts: []informer.Option{informer.WithPredicates(informer.ResourceVersionChanged())},
			events: []event{
				{"resync", func(h typedHandler) { h.OnUpdate(web, web) }, false},
				{"change", func(h typedHandler) { h.OnUpdate(web, webStatus) }, true},
				{"no resource version", func(h typedHandler) {
					h.OnUpdate(deployment("ns", "a"), deployment("ns", "a"))
				}, true},
				{"add", func(h typedHandler) { h.OnAdd(web, true) }, true},
			},
		},
		{
			name: "predicates accumulate",
			opts: []informer.Option{
				informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web"))),
				nil,
				informer.WithPredicates(nil, informer.ObjectPredicate(nil), informer.GenerationChanged()),
			},
			events: []event{
				{"spec change in selection", func(h typedHandler) { h.OnUpdate(web, webGen2) }, true},
				{"status change in selection", func(h typedHandler) { h.OnUpdate(web, webStatus) }, false},
				{"spec change outside", func(h typedHandler) { h.OnUpdate(db, db) }, false},
				{"add outside", func(h typedHandler) { h.OnAdd(db, false) }, false},
				{"delete outside", func(h typedHandler) { h.OnDelete(deleted(db)) }, false},
				{"delete without object", func(h typedHandler) { h.OnDelete(gone) }, true},
			},
		},
		{
			name: "typed object function",
			opts: []informer.Option{informer.WithPredicates(informer.ObjectFunc(func(d *appsv1.Deployment) bool {
				return d.Generation > 1
			}))},
			events: []event{
				{"add", func(h typedHandler) { h.OnAdd(webGen2, false) }, true},
				{"add rejected", func(h typedHandler) { h.OnAdd(web, false) }, false},
				{"delete rejected", func(h typedHandler) { h.OnDelete(unknown("ns/a", web)) }, false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ev := range tt.events {
				t.Run(ev.name, func(t *testing.T) {
					r := &recorder{}
					h := informer.NewHandler[*appsv1.Deployment](r.handler(), tt.opts...)
					ev.deliver(h)
					calls := r.snapshot()
					if ev.wantCall {
						assert.Len(t, calls, 1, "calls: %v", calls)
					} else {
						assert.Empty(t, calls)
					}
				})
			}
		})
	}
}

// Panics of the wrapped handler or of predicates reach the informer.
func TestHandlerDoesNotRecoverPanics(t *testing.T) {
	panicking := informer.ObjectPredicate(func(metav1.Object) bool { panic("predicate") })
	h := informer.NewHandler[*appsv1.Deployment](cache.TypedResourceEventHandlerFuncs[*appsv1.Deployment]{},
		informer.WithPredicates(panicking))
	assert.PanicsWithValue(t, "predicate", func() { h.OnAdd(deployment("ns", "a"), false) })

	h = informer.NewHandler[*appsv1.Deployment](cache.TypedResourceEventHandlerFuncs[*appsv1.Deployment]{
		AddFunc: func(*appsv1.Deployment) { panic("handler") },
	}, informer.WithPredicates(informer.PredicateFuncs{}))
	assert.PanicsWithValue(t, "handler", func() { h.OnAdd(deployment("ns", "a"), false) })
}
