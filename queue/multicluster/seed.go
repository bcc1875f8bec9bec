package multicluster

import (
	"errors"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// seedInformers gives each informer of the factories to, which have not
// started, the objects of the informer of the same type in the factory
// at the same place of from (the factories of the cluster's previous
// attempt that started its informers, shut down since), and returns how
// many informers it seeded. When a seeded informer lists, client-go
// replaces its store with the list: each object of the seed the list no
// longer shows reaches the informer's handlers as a deletion
// (cache.DeletedFinalStateUnknown), each whose resourceVersion changed as
// an update, as after a single-cluster informer's relist. A factory that
// is not of the same type as the one at its place in from, or has no
// InformerFor method (client-go's and code-generator's factories have
// one), is not seeded, nor is an informer that has started or holds
// objects already.
func seedInformers(from, to []informer.Factory) (seeded int) {
	for i, fac := range to {
		if i >= len(from) || reflect.TypeOf(from[i]) != reflect.TypeOf(fac) || same(from[i], fac) {
			continue
		}
		closed := make(chan struct{})
		close(closed)
		for typ := range from[i].WaitForCacheSync(closed) {
			old := informerFor(from[i], typ)
			inf := informerFor(fac, typ)
			if old == nil || inf == nil || same(old, inf) {
				continue
			}
			if s, ok := inf.(interface{ HasStarted() bool }); ok && s.HasStarted() {
				continue
			}
			store := inf.GetIndexer()
			if len(store.ListKeys()) > 0 {
				continue
			}
			objs := old.GetIndexer().List()
			if len(objs) == 0 {
				continue
			}
			if err := store.Replace(objs, ""); err != nil {
				continue
			}
			seeded++
		}
	}
	return seeded
}

// errNoInformer is what informerFor's constructor panics with: the
// factory has no informer of the type asked for, and must make none.
var errNoInformer = errors.New("no informer of this type")

var runtimeObject = reflect.TypeFor[runtime.Object]()

// informerFor returns fac's informer of objects of type typ (a pointer
// type, as the keys of WaitForCacheSync), nil if fac has none or no
// InformerFor(runtime.Object, func(client, time.Duration)
// cache.SharedIndexInformer) cache.SharedIndexInformer method. It makes
// no informer: the constructor it passes panics, and the panic is
// recovered.
func informerFor(fac informer.Factory, typ reflect.Type) (inf cache.SharedIndexInformer) {
	method := reflect.ValueOf(fac).MethodByName("InformerFor")
	if !method.IsValid() || typ == nil || typ.Kind() != reflect.Pointer || !typ.Implements(runtimeObject) {
		return nil
	}
	mt := method.Type()
	if mt.NumIn() != 2 || mt.NumOut() != 1 || mt.In(0) != runtimeObject || mt.In(1).Kind() != reflect.Func ||
		!mt.Out(0).Implements(reflect.TypeFor[cache.SharedIndexInformer]()) {
		return nil
	}
	none := reflect.MakeFunc(mt.In(1), func([]reflect.Value) []reflect.Value { panic(errNoInformer) })
	defer func() {
		if r := recover(); r != nil {
			if r != errNoInformer { //nolint:errorlint // the very value panicked with
				panic(r)
			}
			inf = nil
		}
	}()
	out := method.Call([]reflect.Value{reflect.New(typ.Elem()), none})
	inf, _ = out[0].Interface().(cache.SharedIndexInformer)
	return inf
}

// same reports whether a and b are the same value, if their type can be
// compared.
func same(a, b any) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t != nil && t.Comparable() && a == b
}
