package informer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

func TestHandlerTypeSafety(t *testing.T) {
	dep := deployment("ns", "a")
	dep2 := deployment("ns", "a", withRV("2"))
	var nilDep *appsv1.Deployment
	var nilTomb *cache.DeletedFinalStateUnknown
	tomb := tombstone("ns/a", dep)

	tests := []struct {
		name       string
		deliver    func(h cache.ResourceEventHandler)
		wantCalls  []call
		wantReport *informer.UnexpectedTypeError
	}{
		{
			name:      "add deployment from initial list",
			deliver:   func(h cache.ResourceEventHandler) { h.OnAdd(dep, true) },
			wantCalls: []call{{Event: "add", Obj: dep, InitialList: true}},
		},
		{
			name:      "add deployment after start",
			deliver:   func(h cache.ResourceEventHandler) { h.OnAdd(dep, false) },
			wantCalls: []call{{Event: "add", Obj: dep}},
		},
		{
			name:       "add pod",
			deliver:    func(h cache.ResourceEventHandler) { h.OnAdd(pod("ns", "p"), false) },
			wantReport: &informer.UnexpectedTypeError{Event: "add", Expected: "*v1.Deployment", Actual: "*v1.Pod"},
		},
		{
			name:       "add nil",
			deliver:    func(h cache.ResourceEventHandler) { h.OnAdd(nil, false) },
			wantReport: &informer.UnexpectedTypeError{Event: "add", Expected: "*v1.Deployment", Actual: "<nil>"},
		},
		{
			name:       "add nil pointer",
			deliver:    func(h cache.ResourceEventHandler) { h.OnAdd(nilDep, false) },
			wantReport: &informer.UnexpectedTypeError{Event: "add", Expected: "*v1.Deployment", Actual: "nil *v1.Deployment"},
		},
		{
			name:       "add tombstone is not unwrapped",
			deliver:    func(h cache.ResourceEventHandler) { h.OnAdd(tomb, false) },
			wantReport: &informer.UnexpectedTypeError{Event: "add", Expected: "*v1.Deployment", Actual: "cache.DeletedFinalStateUnknown"},
		},
		{
			name:      "update deployment",
			deliver:   func(h cache.ResourceEventHandler) { h.OnUpdate(dep, dep2) },
			wantCalls: []call{{Event: "update", Old: dep, Obj: dep2}},
		},
		{
			name:       "update with wrong old type",
			deliver:    func(h cache.ResourceEventHandler) { h.OnUpdate(pod("ns", "a"), dep2) },
			wantReport: &informer.UnexpectedTypeError{Event: "update", Expected: "*v1.Deployment", Actual: "*v1.Pod"},
		},
		{
			name:       "update with nil new object",
			deliver:    func(h cache.ResourceEventHandler) { h.OnUpdate(dep, nil) },
			wantReport: &informer.UnexpectedTypeError{Event: "update", Expected: "*v1.Deployment", Actual: "<nil>"},
		},
		{
			name:      "delete deployment",
			deliver:   func(h cache.ResourceEventHandler) { h.OnDelete(dep) },
			wantCalls: []call{{Event: "delete", Obj: dep}},
		},
		{
			name:      "delete tombstone",
			deliver:   func(h cache.ResourceEventHandler) { h.OnDelete(tomb) },
			wantCalls: []call{{Event: "delete", Obj: dep, Tombstone: true}},
		},
		{
			name:      "delete tombstone pointer",
			deliver:   func(h cache.ResourceEventHandler) { h.OnDelete(&tomb) },
			wantCalls: []call{{Event: "delete", Obj: dep, Tombstone: true}},
		},
		{
			name:    "delete tombstone of wrong type",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/p", pod("ns", "p"))) },
			wantReport: &informer.UnexpectedTypeError{Event: "delete", Expected: "*v1.Deployment", Actual: "*v1.Pod",
				Tombstone: true, Key: "ns/p"},
		},
		{
			name:    "delete tombstone without object",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/gone", nil)) },
			wantReport: &informer.UnexpectedTypeError{Event: "delete", Expected: "*v1.Deployment", Actual: "<nil>",
				Tombstone: true, Key: "ns/gone"},
		},
		{
			name:    "delete tombstone with nil pointer",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/a", nilDep)) },
			wantReport: &informer.UnexpectedTypeError{Event: "delete", Expected: "*v1.Deployment", Actual: "nil *v1.Deployment",
				Tombstone: true, Key: "ns/a"},
		},
		{
			name:    "delete nil tombstone pointer",
			deliver: func(h cache.ResourceEventHandler) { h.OnDelete(nilTomb) },
			wantReport: &informer.UnexpectedTypeError{Event: "delete", Expected: "*v1.Deployment",
				Actual: "nil *cache.DeletedFinalStateUnknown"},
		},
		{
			name:       "delete string",
			deliver:    func(h cache.ResourceEventHandler) { h.OnDelete("ns/a") },
			wantReport: &informer.UnexpectedTypeError{Event: "delete", Expected: "*v1.Deployment", Actual: "string"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			h := informer.NewHandler(r.funcs(), informer.WithErrorHandler(r.errorHandler))
			require.NotPanics(t, func() { tt.deliver(h) })
			calls, reports := r.snapshot()
			assert.Equal(t, tt.wantCalls, calls)
			if tt.wantReport == nil {
				assert.Empty(t, reports)
				return
			}
			require.Len(t, reports, 1)
			assert.Equal(t, tt.wantReport, reports[0])
		})
	}
}

func TestHandlerNilCallbacks(t *testing.T) {
	r := &recorder{}
	h := informer.NewHandler(informer.Funcs[*appsv1.Deployment]{}, informer.WithErrorHandler(r.errorHandler))
	dep := deployment("ns", "a")
	assert.NotPanics(t, func() {
		h.OnAdd(dep, true)
		h.OnUpdate(dep, dep)
		h.OnDelete(dep)
		h.OnDelete(tombstone("ns/a", dep))
	})
	_, reports := r.snapshot()
	assert.Empty(t, reports)
}

func TestHandlerInterfaceType(t *testing.T) {
	// A handler on metav1.Object accepts every object with metadata and
	// still rejects nil pointers behind the interface.
	var got []string
	h := informer.NewHandler(informer.Funcs[metav1.Object]{
		AddFunc: func(obj metav1.Object, _ bool) { got = append(got, obj.GetName()) },
	}, informer.WithErrorHandler(func(_ context.Context, err error, _ string, _ ...any) {
		got = append(got, err.Error())
	}))
	var nilDep *appsv1.Deployment
	h.OnAdd(deployment("ns", "d"), false)
	h.OnAdd(pod("ns", "p"), false)
	h.OnAdd(nilDep, false)
	h.OnAdd(42, false)
	assert.Equal(t, []string{
		"d",
		"p",
		"informer: add event: expected v1.Object, got nil *v1.Deployment",
		"informer: add event: expected v1.Object, got int",
	}, got)
}

func TestUnexpectedTypeErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *informer.UnexpectedTypeError
		want string
	}{
		{
			name: "plain",
			err:  &informer.UnexpectedTypeError{Event: "add", Expected: "*v1.Deployment", Actual: "*v1.Pod"},
			want: "informer: add event: expected *v1.Deployment, got *v1.Pod",
		},
		{
			name: "tombstone",
			err: &informer.UnexpectedTypeError{Event: "delete", Expected: "*v1.Deployment", Actual: "<nil>",
				Tombstone: true, Key: "ns/a"},
			want: `informer: delete event: expected *v1.Deployment, got <nil> in a DeletedFinalStateUnknown with key "ns/a"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}

type ctxKey struct{}

func TestHandlerReportContextAndKeyValues(t *testing.T) {
	r := &recorder{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "marker")
	h := informer.NewHandler(r.funcs(), informer.WithContext(ctx), informer.WithErrorHandler(r.errorHandler))
	h.OnDelete(tombstone("ns/p", pod("ns", "p")))

	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.ctxs, 1)
	assert.Equal(t, "marker", r.ctxs[0].Value(ctxKey{}))
	assert.Equal(t, []any{"event", "delete", "expectedType", "*v1.Deployment", "actualType", "*v1.Pod", "tombstoneKey", "ns/p"}, r.kvs[0])
}

func TestHandlerDefaultErrorHandler(t *testing.T) {
	// The default reports through utilruntime.HandleErrorWithContext, whose
	// handlers are a package variable of apimachinery. Swap them for the
	// duration of this (non-parallel) test.
	var got []error
	var gotCtx []context.Context
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(ctx context.Context, err error, _ string, _ ...any) {
		got = append(got, err)
		gotCtx = append(gotCtx, ctx)
	}}
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })

	ctx := context.WithValue(context.Background(), ctxKey{}, "marker")
	tests := []struct {
		name    string
		opts    []informer.Option
		wantCtx any
	}{
		{name: "no options"},
		{name: "nil options ignored", opts: []informer.Option{nil, informer.WithContext(nil), informer.WithErrorHandler(nil)}},
		{name: "context", opts: []informer.Option{informer.WithContext(ctx)}, wantCtx: "marker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotCtx = nil, nil
			h := informer.NewHandler(informer.Funcs[*appsv1.Deployment]{}, tt.opts...)
			require.NotPanics(t, func() { h.OnAdd(pod("ns", "p"), false) })
			require.Len(t, got, 1)
			var ute *informer.UnexpectedTypeError
			require.True(t, errors.As(got[0], &ute))
			assert.Equal(t, "*v1.Pod", ute.Actual)
			assert.Equal(t, tt.wantCtx, gotCtx[0].Value(ctxKey{}))
		})
	}
}

func TestHandlerFiltersSeeUnwrappedObjects(t *testing.T) {
	dep := deployment("ns", "a", withLabels("app", "web"))
	var seen []any
	spy := informer.PredicateFuncs{
		AddFunc:    func(obj metav1.Object) bool { seen = append(seen, obj); return true },
		UpdateFunc: func(o, n metav1.Object) bool { seen = append(seen, o, n); return true },
		DeleteFunc: func(obj metav1.Object) bool { seen = append(seen, obj); return true },
	}
	r := &recorder{}
	h := informer.NewHandler(r.funcs(),
		informer.WithPredicates(spy, informer.LabelSelector(mustSelector(t, "app=web"))),
		informer.WithErrorHandler(r.errorHandler))

	h.OnDelete(tombstone("ns/a", dep))
	h.OnDelete(&cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: dep})
	h.OnDelete(tombstone("ns/p", pod("ns", "p"))) // reported, never filtered

	for _, s := range seen {
		assert.IsType(t, &appsv1.Deployment{}, s, "predicates must only see the unwrapped object")
	}
	assert.Len(t, seen, 2)
	calls, reports := r.snapshot()
	assert.Equal(t, []call{
		{Event: "delete", Obj: dep, Tombstone: true},
		{Event: "delete", Obj: dep, Tombstone: true},
	}, calls)
	assert.Len(t, reports, 1)
}

func TestHandlerPredicates(t *testing.T) {
	web := deployment("ns", "a", withLabels("app", "web"), withGeneration(1), withRV("1"))
	webGen2 := deployment("ns", "a", withLabels("app", "web"), withGeneration(2), withRV("2"))
	webStatus := deployment("ns", "a", withLabels("app", "web"), withGeneration(1), withRV("3"))
	db := deployment("ns", "a", withLabels("app", "db"), withGeneration(2), withRV("4"))

	type event struct {
		name     string
		deliver  func(h cache.ResourceEventHandler)
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
				{"add matching", func(h cache.ResourceEventHandler) { h.OnAdd(web, false) }, true},
				{"add other", func(h cache.ResourceEventHandler) { h.OnAdd(db, false) }, false},
				{"update leaving selection", func(h cache.ResourceEventHandler) { h.OnUpdate(web, db) }, true},
				{"update entering selection", func(h cache.ResourceEventHandler) { h.OnUpdate(db, web) }, true},
				{"update outside", func(h cache.ResourceEventHandler) { h.OnUpdate(db, db) }, false},
				{"delete tombstone matching", func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/a", web)) }, true},
				{"delete tombstone other", func(h cache.ResourceEventHandler) { h.OnDelete(tombstone("ns/a", db)) }, false},
			},
		},
		{
			name: "generation changed",
			opts: []informer.Option{informer.WithPredicates(informer.GenerationChanged())},
			events: []event{
				{"add", func(h cache.ResourceEventHandler) { h.OnAdd(web, false) }, true},
				{"spec change", func(h cache.ResourceEventHandler) { h.OnUpdate(web, webGen2) }, true},
				{"status change", func(h cache.ResourceEventHandler) { h.OnUpdate(web, webStatus) }, false},
				{"delete", func(h cache.ResourceEventHandler) { h.OnDelete(web) }, true},
			},
		},
		{
			name: "resource version changed",
			opts: []informer.Option{informer.WithPredicates(informer.ResourceVersionChanged())},
			events: []event{
				{"resync", func(h cache.ResourceEventHandler) { h.OnUpdate(web, web) }, false},
				{"change", func(h cache.ResourceEventHandler) { h.OnUpdate(web, webStatus) }, true},
				{"no resource version", func(h cache.ResourceEventHandler) {
					h.OnUpdate(deployment("ns", "a"), deployment("ns", "a"))
				}, true},
				{"add", func(h cache.ResourceEventHandler) { h.OnAdd(web, true) }, true},
			},
		},
		{
			name: "predicates accumulate",
			opts: []informer.Option{
				informer.WithPredicates(informer.LabelSelector(mustSelector(t, "app=web"))),
				informer.WithPredicates(nil, informer.ObjectPredicate(nil), informer.GenerationChanged()),
			},
			events: []event{
				{"spec change in selection", func(h cache.ResourceEventHandler) { h.OnUpdate(web, webGen2) }, true},
				{"status change in selection", func(h cache.ResourceEventHandler) { h.OnUpdate(web, webStatus) }, false},
				{"spec change outside", func(h cache.ResourceEventHandler) { h.OnUpdate(db, db) }, false},
				{"add outside", func(h cache.ResourceEventHandler) { h.OnAdd(db, false) }, false},
				{"delete outside", func(h cache.ResourceEventHandler) { h.OnDelete(db) }, false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ev := range tt.events {
				t.Run(ev.name, func(t *testing.T) {
					r := &recorder{}
					opts := append([]informer.Option{informer.WithErrorHandler(r.errorHandler)}, tt.opts...)
					h := informer.NewHandler(r.funcs(), opts...)
					ev.deliver(h)
					calls, reports := r.snapshot()
					assert.Empty(t, reports)
					assert.Equal(t, ev.wantCall, len(calls) == 1, "calls: %v", calls)
				})
			}
		})
	}
}
