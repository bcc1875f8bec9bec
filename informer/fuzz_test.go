package informer_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Shapes of the deletes a typed informer delivers.
const (
	// The informer saw the delete: the object in its final state.
	deletePlain = iota
	// Noticed on a relist: the last known state, and a tombstone.
	deleteStale
	// Noticed on a relist without any known state: a tombstone whose Obj
	// is nil.
	deleteNoObject
	// A tombstone whose Obj is a nil *Deployment.
	deleteNilPointer
	numDeleteShapes
)

// buildDelete returns the delete of d in a shape, and the key client-go
// gives it.
func buildDelete(shape int, d *appsv1.Deployment) (cache.DeletedObject[*appsv1.Deployment], cache.ObjectName) {
	storeKey := cache.MetaObjectToName(d).String()
	// A tombstone's key is split at its first slash.
	tombKey := cache.ObjectName{Name: storeKey}
	if ns, name, ok := strings.Cut(storeKey, "/"); ok {
		tombKey = cache.ObjectName{Namespace: ns, Name: name}
	}
	switch shape {
	case deletePlain:
		return deleted(d), cache.MetaObjectToName(d)
	case deleteStale:
		return unknown(storeKey, d), tombKey
	case deleteNoObject:
		return unknown[*appsv1.Deployment](storeKey, nil), tombKey
	default:
		return cache.DeletedObject[*appsv1.Deployment]{
			FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: storeKey, Obj: (*appsv1.Deployment)(nil)},
		}, tombKey
	}
}

// FuzzHandler delivers arbitrary adds, updates and deletes of every shape to
// a handler behind predicates and to EnqueueHandler with the same options,
// and checks that neither panics, that the handler gets exactly the events
// the predicates pass (deletes without object always), unchanged, and that
// EnqueueHandler enqueues exactly their keys at the expected priority.
func FuzzHandler(f *testing.F) {
	for shape := range numDeleteShapes {
		for event := range 3 {
			f.Add(uint8(event), uint8(shape), "ns", "a", "web", "web", "1", "2", int64(1), int64(2), false, false, false)
			f.Add(uint8(event), uint8(shape), "ns", "a", "db", "web", "1", "2", int64(1), int64(2), true, true, true)
		}
	}
	f.Add(uint8(1), uint8(0), "ns", "a", "web", "web", "7", "7", int64(1), int64(1), false, true, false)
	f.Add(uint8(1), uint8(0), "ns", "a", "", "", "", "", int64(0), int64(0), true, true, false)
	f.Add(uint8(1), uint8(0), "", "a", "web", "db", "1", "2", int64(1), int64(2), false, false, true)
	f.Add(uint8(1), uint8(0), "ns", "a", "db", "db", "1", "2", int64(1), int64(2), false, false, true)
	f.Add(uint8(2), uint8(deleteStale), "ns", "a", "db", "db", "1", "1", int64(1), int64(1), false, false, true)
	f.Add(uint8(2), uint8(deleteNoObject), "", "a/b", "db", "", "1", "1", int64(1), int64(1), false, false, true)
	f.Add(uint8(2), uint8(deleteNilPointer), "ns", "a/b", "web", "", "1", "1", int64(1), int64(1), false, false, true)
	f.Add(uint8(0), uint8(0), "ns", "a", "web", "", "1", "1", int64(1), int64(1), true, false, true)

	f.Fuzz(func(t *testing.T, event, shape uint8, ns, name, label, oldLabel, rv, oldRV string,
		gen, oldGen int64, initial, skipResync, filter bool) {
		newDep := deployment(ns, name, withLabels("app", label), withRV(rv), withGeneration(gen))
		oldDep := deployment(ns, name, withLabels("app", oldLabel), withRV(oldRV), withGeneration(oldGen))

		var opts []informer.Option
		if skipResync {
			opts = append(opts, informer.WithPredicates(informer.ResourceVersionChanged()))
		}
		if filter {
			opts = append(opts, informer.WithPredicates(informer.ObjectFunc(func(d *appsv1.Deployment) bool {
				return d.Labels["app"] == "web"
			})))
		}
		r := &recorder{}
		h := informer.NewHandler[*appsv1.Deployment](r.handler(), opts...)
		q := &lanes{}
		e := informer.EnqueueHandler[*appsv1.Deployment](q, opts...)

		var passes, low bool
		var want call
		var wantKey cache.ObjectName
		switch event % 3 {
		case 0:
			require.NotPanics(t, func() { h.OnAdd(newDep, initial) })
			require.NotPanics(t, func() { e.OnAdd(newDep, initial) })
			passes = !filter || label == "web"
			low = initial
			want = call{Event: "add", Obj: newDep, InitialList: initial}
			wantKey = cache.MetaObjectToName(newDep)
		case 1:
			require.NotPanics(t, func() { h.OnUpdate(oldDep, newDep) })
			require.NotPanics(t, func() { e.OnUpdate(oldDep, newDep) })
			resync := rv != "" && rv == oldRV
			passes = !(skipResync && resync) && (!filter || label == "web" || oldLabel == "web")
			low = resync
			want = call{Event: "update", Old: oldDep, Obj: newDep}
			wantKey = cache.MetaObjectToName(newDep)
		case 2:
			s := int(shape % numDeleteShapes)
			obj, key := buildDelete(s, newDep)
			require.NotPanics(t, func() { h.OnDelete(obj) })
			require.NotPanics(t, func() { e.OnDelete(obj) })
			hasObject := s == deletePlain || s == deleteStale
			passes = !hasObject || !filter || label == "web"
			want = call{Event: "delete", Key: key, FinalStateUnknown: s != deletePlain}
			if hasObject {
				want.Obj = newDep
			}
			wantKey = key
		}

		if !passes {
			assert.Empty(t, r.snapshot())
			assert.Empty(t, q.fresh)
			assert.Empty(t, q.low)
			return
		}
		assert.Equal(t, []call{want}, r.snapshot())
		if low {
			assert.Empty(t, q.fresh)
			assert.Equal(t, []cache.ObjectName{wantKey}, q.low)
		} else {
			assert.Equal(t, []cache.ObjectName{wantKey}, q.fresh)
			assert.Empty(t, q.low)
		}
	})
}
