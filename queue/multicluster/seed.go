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
// of from (the factories of the cluster's previous attempt that started
// its informers, shut down since) that lists the same objects, and
// returns how many informers it seeded. When a seeded informer lists,
// client-go replaces its store with the list: each object of the seed the
// list no longer shows reaches the informer's handlers as a deletion
// (cache.DeletedFinalStateUnknown), each whose resourceVersion changed as
// an update, as after a single-cluster informer's relist.
//
// Two factories list the same objects when they are of one type (and
// client-go's or code-generator's shape) with the same namespace and the
// same list options function (by its code: one whose captured selector
// changes between attempts is taken for the same). A factory that has no
// such twin in from, or more than one, is not seeded (an object it shows
// may be one the other lists), nor is an informer that has started or
// holds objects already, nor a factory without client-go's InformerFor.
func seedInformers(from, to []informer.Factory) (seeded int) {
	twins := map[factoryScope][]informer.Factory{}
	for _, fac := range from {
		if scope, ok := scopeOf(fac); ok {
			twins[scope] = append(twins[scope], fac)
		}
	}
	var targets []factoryScope
	for _, fac := range to {
		if scope, ok := scopeOf(fac); ok {
			targets = append(targets, scope)
		}
	}
	for _, fac := range to {
		scope, ok := scopeOf(fac)
		if !ok || len(twins[scope]) != 1 || countOf(targets, scope) != 1 || same(twins[scope][0], fac) {
			continue
		}
		seeded += seedFactory(twins[scope][0], fac)
	}
	return seeded
}

// seedFactory seeds the informers of to with those of from, its twin.
func seedFactory(from, to informer.Factory) (seeded int) {
	closed := make(chan struct{})
	close(closed)
	for typ := range from.WaitForCacheSync(closed) {
		old := informerFor(from, typ)
		inf := informerFor(to, typ)
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
	return seeded
}

// factoryScope is what a factory lists: its type, namespace and list
// options function.
type factoryScope struct {
	typ       reflect.Type
	namespace string
	tweak     uintptr
}

// scopeOf returns fac's scope, if fac is a pointer to a struct with the
// namespace and tweakListOptions fields of client-go's and
// code-generator's factories.
func scopeOf(fac informer.Factory) (factoryScope, bool) {
	v := reflect.ValueOf(fac)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return factoryScope{}, false
	}
	ns, tweak := v.Elem().FieldByName("namespace"), v.Elem().FieldByName("tweakListOptions")
	if !ns.IsValid() || ns.Kind() != reflect.String || !tweak.IsValid() || tweak.Kind() != reflect.Func {
		return factoryScope{}, false
	}
	return factoryScope{typ: v.Type(), namespace: ns.String(), tweak: tweak.Pointer()}, true
}

// countOf counts scope in scopes.
func countOf(scopes []factoryScope, scope factoryScope) (n int) {
	for _, s := range scopes {
		if s == scope {
			n++
		}
	}
	return n
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
// recovered, as is any other panic of InformerFor (nil: a factory that
// panics is not seeded).
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
		if recover() != nil {
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
