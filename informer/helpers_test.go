package informer_test

import (
	"context"
	"errors"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// call is one observed callback.
type call struct {
	Event       string
	Obj         metav1.Object
	Old         metav1.Object
	InitialList bool
	Tombstone   bool
}

// recorder collects callbacks and error reports of a handler.
type recorder struct {
	mu      sync.Mutex
	calls   []call
	reports []*informer.UnexpectedTypeError
	ctxs    []context.Context
	kvs     [][]any
}

func (r *recorder) funcs() informer.Funcs[*appsv1.Deployment] {
	return informer.Funcs[*appsv1.Deployment]{
		AddFunc: func(obj *appsv1.Deployment, initial bool) {
			r.record(call{Event: "add", Obj: obj, InitialList: initial})
		},
		UpdateFunc: func(oldObj, newObj *appsv1.Deployment) {
			r.record(call{Event: "update", Old: oldObj, Obj: newObj})
		},
		DeleteFunc: func(obj *appsv1.Deployment, tombstone bool) {
			r.record(call{Event: "delete", Obj: obj, Tombstone: tombstone})
		},
	}
}

func (r *recorder) record(c call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// errorHandler matches utilruntime.ErrorHandler.
func (r *recorder) errorHandler(ctx context.Context, err error, _ string, kv ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ute *informer.UnexpectedTypeError
	if !errors.As(err, &ute) {
		panic("unexpected error type reported: " + err.Error())
	}
	r.reports = append(r.reports, ute)
	r.ctxs = append(r.ctxs, ctx)
	r.kvs = append(r.kvs, kv)
}

func (r *recorder) snapshot() ([]call, []*informer.UnexpectedTypeError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...), append([]*informer.UnexpectedTypeError(nil), r.reports...)
}

type deployOpt func(*appsv1.Deployment)

func deployment(ns, name string, opts ...deployOpt) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, o := range opts {
		o(d)
	}
	return d
}

func withLabels(kv ...string) deployOpt {
	return func(d *appsv1.Deployment) {
		d.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			d.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withRV(rv string) deployOpt {
	return func(d *appsv1.Deployment) { d.ResourceVersion = rv }
}

func withGeneration(g int64) deployOpt {
	return func(d *appsv1.Deployment) { d.Generation = g }
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func tombstone(key string, obj any) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
}
