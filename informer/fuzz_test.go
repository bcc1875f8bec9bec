package informer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Shapes of what an informer (or a buggy caller) may hand to a handler.
const (
	shapeDeployment = iota
	shapePod
	shapeNil
	shapeNilDeployment
	shapeTombstone
	shapeTombstonePod
	shapeTombstoneNil
	shapeTombstonePointer
	shapeNilTombstonePointer
	shapeString
	numShapes
)

// build returns the object for a shape, and the deployment inside it (nil
// if the shape carries none).
func build(shape int, d *appsv1.Deployment) (any, *appsv1.Deployment) {
	key := d.Namespace + "/" + d.Name
	switch shape {
	case shapeDeployment:
		return d, d
	case shapePod:
		return pod(d.Namespace, d.Name), nil
	case shapeNil:
		return nil, nil
	case shapeNilDeployment:
		return (*appsv1.Deployment)(nil), nil
	case shapeTombstone:
		return tombstone(key, d), d
	case shapeTombstonePod:
		return tombstone(key, pod(d.Namespace, d.Name)), nil
	case shapeTombstoneNil:
		return tombstone(key, nil), nil
	case shapeTombstonePointer:
		return &cache.DeletedFinalStateUnknown{Key: key, Obj: d}, d
	case shapeNilTombstonePointer:
		return (*cache.DeletedFinalStateUnknown)(nil), nil
	default:
		return key, nil
	}
}

func isTombstoneShape(shape int) bool {
	return shape == shapeTombstone || shape == shapeTombstonePointer
}

// FuzzHandler delivers arbitrary objects, tombstones, wrong types and nils
// to a typed handler and checks that it never panics and that every event
// ends in exactly the expected callback or exactly one error report.
func FuzzHandler(f *testing.F) {
	for shape := range numShapes {
		for event := range 3 {
			f.Add(uint8(event), uint8(shape), uint8(shapeDeployment), "ns", "a", "web", "web", "1", "2", int64(1), int64(2), false, false, false)
		}
	}
	f.Add(uint8(1), uint8(shapePod), uint8(shapeDeployment), "ns", "a", "web", "web", "1", "2", int64(1), int64(2), false, false, false)
	f.Add(uint8(1), uint8(shapeDeployment), uint8(shapeDeployment), "ns", "a", "web", "web", "7", "7", int64(1), int64(1), false, true, false)
	f.Add(uint8(1), uint8(shapeDeployment), uint8(shapeDeployment), "ns", "a", "", "", "", "", int64(0), int64(0), true, true, false)
	f.Add(uint8(1), uint8(shapeDeployment), uint8(shapeDeployment), "", "a", "web", "db", "1", "2", int64(1), int64(2), false, false, true)
	f.Add(uint8(1), uint8(shapeDeployment), uint8(shapeDeployment), "ns", "a", "db", "db", "1", "2", int64(1), int64(2), false, false, true)
	f.Add(uint8(2), uint8(shapeTombstone), uint8(0), "ns", "a", "db", "db", "1", "1", int64(1), int64(1), false, false, true)
	f.Add(uint8(2), uint8(shapeTombstonePointer), uint8(0), "ns", "a", "web", "", "1", "1", int64(1), int64(1), false, false, true)
	f.Add(uint8(0), uint8(shapeDeployment), uint8(0), "ns", "a", "web", "", "1", "1", int64(1), int64(1), true, false, true)

	f.Fuzz(func(t *testing.T, event, shape, oldShape uint8, ns, name, label, oldLabel, rv, oldRV string,
		gen, oldGen int64, initial, skipResync, filter bool) {
		newDep := deployment(ns, name, withLabels("app", label), withRV(rv), withGeneration(gen))
		oldDep := deployment(ns, name, withLabels("app", oldLabel), withRV(oldRV), withGeneration(oldGen))
		obj, objDep := build(int(shape%numShapes), newDep)
		old, _ := build(int(oldShape%numShapes), oldDep)

		r := &recorder{}
		opts := []informer.Option{informer.WithErrorHandler(r.errorHandler)}
		if skipResync {
			opts = append(opts, informer.WithPredicates(informer.ResourceVersionChanged()))
		}
		if filter {
			opts = append(opts, informer.WithPredicates(informer.ObjectFunc(func(d *appsv1.Deployment) bool {
				return d.Labels["app"] == "web"
			})))
		}
		h := informer.NewHandler(r.funcs(), opts...)

		s, so := int(shape%numShapes), int(oldShape%numShapes)
		var accepted, passes bool
		var want call
		switch event % 3 {
		case 0:
			require.NotPanics(t, func() { h.OnAdd(obj, initial) })
			accepted = s == shapeDeployment // adds are never unwrapped
			passes = !filter || label == "web"
			want = call{Event: "add", Obj: newDep, InitialList: initial}
		case 1:
			require.NotPanics(t, func() { h.OnUpdate(old, obj) })
			accepted = s == shapeDeployment && so == shapeDeployment
			resync := skipResync && rv != "" && rv == oldRV
			passes = !resync && (!filter || label == "web" || oldLabel == "web")
			want = call{Event: "update", Old: oldDep, Obj: newDep}
		case 2:
			require.NotPanics(t, func() { h.OnDelete(obj) })
			accepted = objDep != nil
			passes = !filter || label == "web"
			want = call{Event: "delete", Obj: newDep, Tombstone: isTombstoneShape(s)}
		}

		calls, reports := r.snapshot()
		switch {
		case !accepted:
			assert.Empty(t, calls)
			require.Len(t, reports, 1, "a mistyped event is reported exactly once")
			assert.Equal(t, "*v1.Deployment", reports[0].Expected)
			assert.NotEqual(t, "*v1.Deployment", reports[0].Actual)
			assert.NotEmpty(t, reports[0].Error())
		case passes:
			assert.Equal(t, []call{want}, calls)
			assert.Empty(t, reports)
		default:
			assert.Empty(t, calls)
			assert.Empty(t, reports)
		}
	})
}
