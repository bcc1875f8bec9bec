package informer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Index is a typed index of an informer's cache: each cached object of type
// T is filed under the values its function returns, so that the objects
// with a given value are found without scanning the cache. Build it with
// NewIndex; it is safe for concurrent use.
type Index[T metav1.Object] struct {
	name    string
	indexer cache.Indexer
}

// NewIndex registers on inf an index named name that files every object of
// type T under values(obj), and returns it. Objects of another type are
// filed under no value. values must not modify the object and should be
// cheap: the informer calls it on every change.
//
// Register indexes before inf starts. If inf already has an index of that
// name, NewIndex uses it as it is: one name must always stand for one
// function, which lets two controllers that need the same index share an
// informer.
func NewIndex[T metav1.Object](inf cache.SharedIndexInformer, name string, values func(obj T) []string) (*Index[T], error) {
	if inf == nil || name == "" || values == nil {
		return nil, fmt.Errorf("informer: NewIndex needs an informer, a name and a values function (name %q)", name)
	}
	idx := &Index[T]{name: name, indexer: inf.GetIndexer()}
	if _, exists := idx.indexer.GetIndexers()[name]; exists {
		return idx, nil
	}
	err := inf.AddIndexers(cache.Indexers{name: func(obj any) ([]string, error) {
		t, ok := obj.(T)
		if !ok || isNil(t) {
			return nil, nil
		}
		return values(t), nil
	}})
	if err != nil {
		return nil, fmt.Errorf("informer: adding index %q: %w", name, err)
	}
	return idx, nil
}

// Name returns the index's name.
func (i *Index[T]) Name() string { return i.name }

// List returns the cached objects filed under value, in no particular order.
// They are shared with the cache and must not be modified.
func (i *Index[T]) List(value string) ([]T, error) {
	objs, err := i.indexer.ByIndex(i.name, value)
	if err != nil {
		return nil, fmt.Errorf("informer: index %q: %w", i.name, err)
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if t, ok := obj.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// Keys returns the keys (namespace and name) of the cached objects filed
// under value, in no particular order.
func (i *Index[T]) Keys(value string) ([]cache.ObjectName, error) {
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
func KeyOf[T metav1.Object](obj T) []string {
	return []string{cache.MetaObjectToName(obj).String()}
}
