package metrics

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
)

// cacheSubsystem names the series of the informer caches.
const (
	cacheSubsystem = "informer_cache"
	labelInformer  = "informer"
)

// ErrCacheNameTaken is wrapped by the error of Recorder.CacheSize when the
// name already counts the cache of an informer that has not stopped.
var ErrCacheNameTaken = errors.New("the name already counts the cache of a running informer; give each informer a name of its own")

// cacheCollectors are the series of CacheSize.
type cacheCollectors struct {
	objects *cacheVec
	bytes   *prometheus.GaugeVec
}

// cacheVec is ctrlkit_informer_cache_objects together with the names that
// count a cache in it. Recorders of one registry share the registered
// cacheVec (see register), and with it the names.
type cacheVec struct {
	*prometheus.GaugeVec
	mu      sync.Mutex
	counted map[string]*cacheCounter // by name; guarded by mu
}

func newCacheCollectors() cacheCollectors {
	informer := []string{labelInformer}
	return cacheCollectors{
		objects: &cacheVec{
			GaugeVec: prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Namespace: ctrlkitNamespace, Subsystem: cacheSubsystem, Name: "objects",
				Help: "Objects an informer's cache holds.",
			}, informer),
			counted: map[string]*cacheCounter{},
		},
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ctrlkitNamespace, Subsystem: cacheSubsystem, Name: "bytes",
			Help: "Approximate memory of the objects an informer's cache holds: the bytes of their Go values, strings, lists and maps.",
		}, informer),
	}
}

// CacheSize keeps ctrlkit_informer_cache_objects and
// ctrlkit_informer_cache_bytes of name up to date with what inf's cache
// holds, from the informer's events: the number of objects and the
// approximate memory they take. The bytes are counted from each object's
// Go values (the struct, and the strings, lists, maps and pointers it
// reaches), not from its encoding, so they show what a transform such as
// informer.StripManagedFields or informer.Trim saves; a value that several
// objects share (a string, or a list informer.Trim stores once) is counted
// for each, and the cache's own keys and indexes are not counted. Call it
// before or after the informer starts (an informer replays its cache to a
// late handler); counting ends when the informer stops, and the series
// keep the last count.
//
// A name counts the cache of one informer: the name is the value of the
// informer label, and each name is one series of each metric, so names
// should come from a small fixed set (an object type, qualified by the
// scope of its informer when two informers of that type run, such as a
// namespace's and the cluster's). While an informer counted under name has
// not stopped, CacheSize refuses name to any informer, that one included,
// with an error wrapping ErrCacheNameTaken; the Recorders of one registry
// share their names. Once that informer has stopped, the name may count
// another, whose count starts from zero. CacheSize also fails for a nil or
// stopped inf.
func (r *Recorder) CacheSize(name string, inf cache.SharedIndexInformer) error {
	if inf == nil {
		return fmt.Errorf("metrics: counting the cache of %q: the informer is nil", name)
	}
	vec := r.cache.objects
	c := &cacheCounter{name: name, inf: inf, vec: vec, objects: vec.WithLabelValues(name), bytes: r.cache.bytes.WithLabelValues(name)}
	vec.mu.Lock()
	prev, ok := vec.counted[name]
	if ok && !prev.inf.IsStopped() {
		vec.mu.Unlock()
		return fmt.Errorf("metrics: counting the cache of %q: %w", name, ErrCacheNameTaken)
	}
	vec.counted[name] = c
	c.set() // zero: a stopped informer's count is not this one's
	vec.mu.Unlock()

	_, err := inf.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.add(1, approximateSize(obj)) },
		UpdateFunc: func(old, obj any) {
			if samePointer(old, obj) { // a resync: nothing changed
				return
			}
			c.add(0, approximateSize(obj)-approximateSize(old))
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.add(-1, -approximateSize(obj))
		},
	}, cache.HandlerOptions{})
	if err != nil {
		// inf has stopped: name goes back to what it counted before.
		vec.mu.Lock()
		defer vec.mu.Unlock()
		if vec.counted[name] == c {
			if prev != nil {
				vec.counted[name] = prev
				prev.set()
			} else {
				delete(vec.counted, name)
				vec.DeleteLabelValues(name)
				r.cache.bytes.DeleteLabelValues(name)
			}
		}
		return fmt.Errorf("metrics: counting the cache of %q: %w", name, err)
	}
	return nil
}

// cacheCounter is the count of one informer's cache under name. Its
// handler runs on one goroutine; another informer may have taken name
// over by the time it runs.
type cacheCounter struct {
	name           string
	inf            cache.SharedIndexInformer
	vec            *cacheVec
	n, size        int64 // guarded by vec.mu
	objects, bytes prometheus.Gauge
}

// add adds to the counts, and sets the series while c counts name.
func (c *cacheCounter) add(objects, size int64) {
	c.vec.mu.Lock()
	defer c.vec.mu.Unlock()
	c.n += objects
	c.size += size
	if c.vec.counted[c.name] == c {
		c.set()
	}
}

// set sets the series to c's counts; vec.mu is held.
func (c *cacheCounter) set() {
	c.objects.Set(float64(c.n))
	c.bytes.Set(float64(c.size))
}

// samePointer reports whether a and b are the same pointer.
func samePointer(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// timeType's values hold a pointer to a time zone that all times share.
var timeType = reflect.TypeFor[time.Time]()

// approximateSize is the memory obj's Go values take: the value a pointer
// points to, and what its fields reach.
func approximateSize(obj any) int64 {
	v := reflect.ValueOf(obj)
	if !v.IsValid() {
		return 0
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		return int64(v.Type().Elem().Size()) + reached(v.Elem(), 0)
	}
	return int64(v.Type().Size()) + reached(v, 0)
}

// maxDepth bounds the walk of reached, for values that point back at
// themselves, which API objects do not.
const maxDepth = 64

// reached is the memory v reaches beyond its own size.
func reached(v reflect.Value, depth int) int64 {
	if depth > maxDepth {
		return 0
	}
	switch v.Kind() {
	case reflect.String:
		return int64(v.Len())
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return int64(v.Type().Elem().Size()) + reached(v.Elem(), depth+1)
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		if e.Kind() == reflect.Pointer {
			return reached(e, depth+1)
		}
		return int64(e.Type().Size()) + reached(e, depth+1)
	case reflect.Slice:
		if v.IsNil() {
			return 0
		}
		n := int64(v.Cap()) * int64(v.Type().Elem().Size())
		for i := range v.Len() {
			n += reached(v.Index(i), depth+1)
		}
		return n
	case reflect.Array:
		var n int64
		for i := range v.Len() {
			n += reached(v.Index(i), depth+1)
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		// A map's header, and per entry its key, value and a control
		// byte with some slack for free slots.
		entry := int64(v.Type().Key().Size() + v.Type().Elem().Size() + 2)
		n := 48 + int64(v.Len())*entry
		for it := v.MapRange(); it.Next(); {
			n += reached(it.Key(), depth+1) + reached(it.Value(), depth+1)
		}
		return n
	case reflect.Struct:
		if v.Type() == timeType {
			return 0
		}
		var n int64
		for i := range v.NumField() {
			n += reached(v.Field(i), depth+1)
		}
		return n
	}
	return 0
}
