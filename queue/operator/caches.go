package operator

import (
	"errors"
	"path"
	"reflect"
	"strconv"

	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/metrics"
)

// WithCacheMetrics makes Run count what the cache of every informer of its
// factories holds once they have synced, in the series of
// metrics.Recorder.CacheSize: objects and approximate bytes, by informer,
// named after its object type's API group (the last element of its Go
// package path) and version, as in "apps/v1.Deployment". Informers of one
// type in several factories (a namespace's and the cluster's, say) are
// counted apart: Run counts them in the order of WithInformers, and when a
// running informer is counted under the type's name already, the next is
// named "apps/v1.Deployment#2", and so on with the lowest number (up to
// 100) whose name no running informer counts. Flags.Options gives it the
// operator's metrics unless --metrics-bind-address is disabled.
func WithCacheMetrics(r *metrics.Recorder) Option {
	return func(c *config) {
		if r == nil {
			c.errs = append(c.errs, errors.New("cache metrics recorder is nil"))
			return
		}
		c.cacheMetrics = r
	}
}

// countCaches registers the cache series of the informers of types, made
// by f, with r.
func countCaches(r *metrics.Recorder, f informer.Factory, types []reflect.Type) error {
	var errs []error
	for _, t := range types {
		if inf := informerOf(f, t); inf != nil {
			errs = append(errs, countCache(r, cacheName(t), inf))
		}
	}
	return errors.Join(errs...)
}

// maxCachesOfAType bounds the informers of one type countCache numbers.
const maxCachesOfAType = 100

// countCache registers the cache series of inf with r under name, or, when
// a running informer is counted under name already, under name followed by
// "#2", "#3" and so on.
func countCache(r *metrics.Recorder, name string, inf cache.SharedIndexInformer) error {
	err := r.CacheSize(name, inf)
	for n := 2; errors.Is(err, metrics.ErrCacheNameTaken) && n <= maxCachesOfAType; n++ {
		err = r.CacheSize(name+"#"+strconv.Itoa(n), inf)
	}
	return err
}

// informerOf returns the informer f made for objects of type t (a pointer
// type, as WaitForCacheSync names them), or nil. client-go's and
// code-generator's factories hand out an existing informer from
// InformerFor(obj, newFunc) without calling newFunc; its type differs per
// generated package, so the method is found by name.
func informerOf(f informer.Factory, t reflect.Type) cache.SharedIndexInformer {
	m := reflect.ValueOf(f).MethodByName("InformerFor")
	if !m.IsValid() || m.Type().NumIn() != 2 || m.Type().NumOut() != 1 || t.Kind() != reflect.Pointer {
		return nil
	}
	obj := reflect.New(t.Elem())
	if !obj.Type().AssignableTo(m.Type().In(0)) {
		return nil
	}
	out := m.Call([]reflect.Value{obj, reflect.Zero(m.Type().In(1))})
	inf, _ := out[0].Interface().(cache.SharedIndexInformer)
	return inf
}

// cacheName names the informer of objects of type t.
func cacheName(t reflect.Type) string {
	e := t.Elem()
	version := path.Base(e.PkgPath())
	group := path.Base(path.Dir(e.PkgPath()))
	return group + "/" + version + "." + e.Name()
}
