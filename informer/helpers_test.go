package informer_test

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// call is one observed callback of a typed handler.
type call struct {
	Event       string
	Obj         *appsv1.Deployment
	Old         *appsv1.Deployment
	InitialList bool
	// For deletes: the key client-go gives the delete, and whether its
	// final state is unknown (it came with a DeletedFinalStateUnknown).
	Key               cache.ObjectName
	FinalStateUnknown bool
}

// recorder collects the callbacks of a typed Deployment handler.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

// handler returns client-go's typed handler funcs recording into r.
func (r *recorder) handler() cache.TypedResourceEventHandlerDetailedFuncs[*appsv1.Deployment] {
	return cache.TypedResourceEventHandlerDetailedFuncs[*appsv1.Deployment]{
		AddFunc: func(obj *appsv1.Deployment, initial bool) {
			r.record(call{Event: "add", Obj: obj, InitialList: initial})
		},
		UpdateFunc: func(oldObj, newObj *appsv1.Deployment) {
			r.record(call{Event: "update", Old: oldObj, Obj: newObj})
		},
		DeleteFunc: func(obj cache.DeletedObject[*appsv1.Deployment]) {
			r.record(call{Event: "delete", Obj: obj.OptionalObj, Key: obj.GetObjectName(), FinalStateUnknown: obj.FinalStateUnknown != nil})
		},
	}
}

func (r *recorder) record(c call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
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

// tombstone is the untyped tombstone an informer's store and transform
// see.
func tombstone(key string, obj any) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
}

// deleted is the delete a typed informer delivers when it saw the object
// go.
func deleted[T cache.Object](obj T) cache.DeletedObject[T] {
	return cache.DeletedObject[T]{OptionalObj: obj}
}

// unknown is the delete a typed informer delivers when it noticed the
// delete only on a relist: the final state is unknown, obj is the last state
// the informer knew. A zero obj makes a delete without any object, as a
// typed informer delivers for a tombstone whose Obj is nil.
func unknown[T cache.Object](key string, obj T) cache.DeletedObject[T] {
	var zero T
	tomb := &cache.DeletedFinalStateUnknown{Key: key}
	if obj != zero {
		tomb.Obj = obj
	}
	return cache.DeletedObject[T]{OptionalObj: obj, FinalStateUnknown: tomb}
}
