package metrics

import (
	"errors"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
)

// cacheSubsystem names the series of the informer caches.
const (
	cacheSubsystem = "informer_cache"
	labelInformer  = "informer"
)

// cacheCollectors are the series of CacheSize.
type cacheCollectors struct {
	objects *prometheus.GaugeVec
	bytes   *prometheus.GaugeVec
}

func newCacheCollectors() cacheCollectors {
	informer := []string{labelInformer}
	return cacheCollectors{
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ctrlkitNamespace, Subsystem: cacheSubsystem, Name: "objects",
			Help: "Objects an informer's cache holds.",
		}, informer),
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
// late handler); counting ends when the informer stops. It fails for an
// informer that has stopped.
func (r *Recorder) CacheSize(name string, inf cache.SharedIndexInformer) error {
	c := &cacheCounter{objects: r.cache.objects.WithLabelValues(name), bytes: r.cache.bytes.WithLabelValues(name)}
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
		return errors.Join(errors.New("metrics: counting the cache of "+name), err)
	}
	return nil
}

// cacheCounter is one informer's totals. Its handler runs on one
// goroutine, but Set must see the latest sums.
type cacheCounter struct {
	n, size        atomic.Int64
	objects, bytes prometheus.Gauge
}

func (c *cacheCounter) add(objects, size int64) {
	c.objects.Set(float64(c.n.Add(objects)))
	c.bytes.Set(float64(c.size.Add(size)))
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
