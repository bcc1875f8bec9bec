package informer

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"unsafe"

	"k8s.io/client-go/tools/cache"
)

// Index is a typed index of an informer's cache: each cached object of type
// T is filed under the values its function returns, so that the objects
// with a given value are found without scanning the cache. Build it with
// NewIndex; it is safe for concurrent use.
type Index[T Object] struct {
	name    string
	indexer cache.TypedIndexer[T]
	values  func(T) []string
	// buckets names the buckets of WithBuckets; nil when objects are filed
	// under their values.
	buckets []string
}

// IndexOption configures NewIndex.
type IndexOption func(*indexConfig)

type indexConfig struct{ buckets int }

// WithBuckets files each object under one of n buckets, chosen by a hash of
// each of its values, instead of under the values themselves; List and
// Keys answer as before, by checking the values of the objects of the
// value's bucket. client-go's indexer keeps a set per value it files
// under, some 200 bytes even for one object: an index whose values each
// belong to few objects (an owner's UID, the name of an object referred
// to) takes that much per object, and with buckets only the set entries
// (some 20 to 60 bytes an object once there are several objects per
// bucket). A lookup then calls the values function on the bucket's
// objects, about objects/n of them. The informer's own indexer (ByIndex of
// the index's name) answers with buckets, not values: read the index
// through the Index. n must be at least 1.
func WithBuckets(n int) IndexOption {
	return func(c *indexConfig) { c.buckets = n }
}

// ErrIndexConflict is wrapped by the error of NewIndex when the informer
// already has an index of the name with another function.
var ErrIndexConflict = errors.New("the informer has an index of that name with another function")

// NewIndex registers on inf an index named name that files every object of
// type T under values(obj), and returns it. values must not modify the
// object and should be cheap: the informer calls it on every change.
//
// Register indexes before inf starts. One name stands for one function: if
// inf already has an index of that name, NewIndex returns it when it was
// made by NewIndex with the same type T, the same function value and the
// same buckets (WithBuckets), so
// that two controllers that need the same index can share an informer, and
// otherwise an error wrapping ErrIndexConflict, for an index that silently
// filed objects by another function would answer wrongly. The same
// function value is a top-level function or one instantiation of a generic
// function (such as owner.ControllerUID[*appsv1.Deployment]), or the very
// same closure; two closures are different values even when they compute
// the same, so share the *Index instead of calling NewIndex twice with
// closures.
func NewIndex[T Object](inf cache.TypedSharedIndexInformer[T], name string, values func(obj T) []string, opts ...IndexOption) (*Index[T], error) {
	if inf == nil || name == "" || values == nil {
		return nil, fmt.Errorf("informer: NewIndex needs an informer, a name and a values function (name %q)", name)
	}
	var cfg indexConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.buckets < 0 || cfg.buckets == 0 && len(opts) > 0 {
		return nil, fmt.Errorf("informer: index %q: %d buckets: want at least 1", name, cfg.buckets)
	}
	idx := &Index[T]{name: name, indexer: inf.GetTypedIndexer(), values: values}
	for i := range cfg.buckets {
		idx.buckets = append(idx.buckets, strconv.Itoa(i))
	}
	id := indexID{typ: reflect.TypeFor[T](), values: funcValue(values), buckets: cfg.buckets}
	indexFunc := func(obj any) ([]string, error) {
		if p, ok := obj.(*indexProbe); ok {
			p.id = id
			return nil, nil
		}
		t, ok := obj.(T)
		if !ok || t == *new(T) {
			return nil, nil
		}
		vs := values(t)
		if idx.buckets == nil {
			return vs, nil
		}
		filed := make([]string, len(vs))
		for i, v := range vs {
			filed[i] = idx.filed(v)
		}
		return filed, nil
	}
	if existing, ok := idx.indexer.GetIndexers()[name]; ok {
		return idx, sameIndex(name, existing, indexFunc, id)
	}
	if err := inf.AddIndexers(cache.Indexers{name: indexFunc}); err != nil {
		// A NewIndex of the same name may have been faster.
		if existing, ok := idx.indexer.GetIndexers()[name]; ok {
			return idx, sameIndex(name, existing, indexFunc, id)
		}
		return nil, fmt.Errorf("informer: adding index %q: %w", name, err)
	}
	return idx, nil
}

// indexID identifies what an index made by NewIndex files objects by.
type indexID struct {
	typ     reflect.Type
	values  unsafe.Pointer
	buckets int
}

// filed returns what an object with value is filed under: its bucket, or
// value itself.
func (i *Index[T]) filed(value string) string {
	if i.buckets == nil {
		return value
	}
	// FNV-1a: the same bucket in every Index of one index function.
	h := uint32(2166136261)
	for j := range len(value) {
		h = (h ^ uint32(value[j])) * 16777619
	}
	return i.buckets[h%uint32(len(i.buckets))]
}

// byValue returns the cached objects filed under value.
func (i *Index[T]) byValue(value string) ([]T, error) {
	objs, err := i.indexer.ByTypedIndex(i.name, i.filed(value))
	if err != nil {
		return nil, fmt.Errorf("informer: index %q: %w", i.name, err)
	}
	if i.buckets == nil {
		return objs, nil
	}
	// The bucket holds the objects of other values too.
	return slices.DeleteFunc(objs, func(obj T) bool { return !slices.Contains(i.values(obj), value) }), nil
}

// indexProbe is given to an index function made by NewIndex to learn its
// indexID; it is never in a cache.
type indexProbe struct{ id indexID }

// sameIndex returns nil if existing, an index function of inf named name,
// was made by NewIndex like ours, with the identity id; otherwise an error
// wrapping ErrIndexConflict.
func sameIndex(name string, existing, ours cache.IndexFunc, id indexID) error {
	// Index functions of NewIndex share their code (for every T of one
	// shape), so only they are given the probe: another function may not
	// expect it.
	if reflect.ValueOf(existing).Pointer() == reflect.ValueOf(ours).Pointer() {
		var p indexProbe
		if _, err := existing(&p); err == nil && p.id == id {
			return nil
		}
	}
	return fmt.Errorf("informer: index %q of type %s: %w", name, id.typ, ErrIndexConflict)
}

// funcValue returns the identity of a function value: the address a func
// value holds (Go represents one as a pointer to its code and captured
// variables). It is the same for every use of a top-level function or of
// one instantiation of a generic function, and differs between closures
// made separately. Code addresses alone would not do: closures of one
// function literal share their code even when they captured different
// values.
func funcValue[F any](f F) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&f)) }

// Name returns the index's name.
func (i *Index[T]) Name() string { return i.name }

// List returns the cached objects filed under value, in no particular order.
// They are shared with the cache and must not be modified.
func (i *Index[T]) List(value string) ([]T, error) {
	return i.byValue(value)
}

// Keys returns the keys (namespace and name) of the cached objects filed
// under value, in no particular order.
func (i *Index[T]) Keys(value string) ([]cache.ObjectName, error) {
	if i.buckets != nil {
		objs, err := i.byValue(value)
		if err != nil {
			return nil, err
		}
		out := make([]cache.ObjectName, len(objs))
		for j, obj := range objs {
			out[j] = cache.MetaObjectToName(obj)
		}
		return out, nil
	}
	keys, err := i.indexer.IndexKeys(i.name, value)
	if err != nil {
		return nil, fmt.Errorf("informer: index %q: %w", i.name, err)
	}
	out := make([]cache.ObjectName, 0, len(keys))
	for _, k := range keys {
		name, err := cache.ParseObjectName(k)
		if err != nil {
			return nil, fmt.Errorf("informer: index %q: %w", i.name, err)
		}
		out = append(out, name)
	}
	return out, nil
}

// KeyOf files an object under its own key, "namespace/name" (or "name"): the
// values function of EnqueueByIndex when the referrers' index holds the keys
// of the objects they refer to.
func KeyOf[T Object](obj T) []string {
	return []string{cache.MetaObjectToName(obj).String()}
}
