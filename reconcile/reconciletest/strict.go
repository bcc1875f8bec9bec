package reconciletest

import (
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// FakeClientset is what client-go's and code-generator's fake clientsets
// have in common: pass the clientset itself (a *fake.Clientset).
type FakeClientset interface {
	Tracker() k8stesting.ObjectTracker
	PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
}

// resourceVersionBase is the first resourceVersion StrictVersions assigns.
// It keeps its versions apart from the small numbers the fake tracker uses
// for lists.
const resourceVersionBase = 1000

// StrictVersions makes fake clientsets keep resourceVersions as an API
// server does, so that a controller's handling of conflicts is exercised by
// unit tests:
//
//   - every create, update, patch and apply stamps the stored object with a
//     new resourceVersion, taken from one counter shared by the given
//     clientsets (so that versions increase across them, as they do across
//     the resources of one API server);
//   - an update or patch that carries a resourceVersion other than the
//     stored object's fails with a 409 Conflict, as it does on an API
//     server; one without a resourceVersion is unconditional;
//   - a create that carries a resourceVersion fails with 400 Bad Request.
//
// Watch events and informer caches then carry the versions, and a
// controller that updates from a stale cache gets the conflict it would get
// from a real cluster. Objects given to a clientset's constructor keep the
// resourceVersion they were given until they are first written; give them
// one (any, such as "1"), or an update of them carries none and is
// unconditional. Call StrictVersions before the clientsets are used.
func StrictVersions(clientsets ...FakeClientset) {
	counter := &versionCounter{next: resourceVersionBase}
	for _, cs := range clientsets {
		st := &strictTracker{ObjectTracker: cs.Tracker(), versions: counter}
		cs.PrependReactor("*", "*", k8stesting.ObjectReaction(st))
	}
}

type versionCounter struct {
	mu   sync.Mutex
	next int64
}

// strictTracker is an ObjectTracker that stamps and checks resourceVersions.
type strictTracker struct {
	k8stesting.ObjectTracker
	versions *versionCounter
}

func (s *strictTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	obj = obj.DeepCopyObject() // the caller's object is left as it was
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetResourceVersion() != "" {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	s.versions.mu.Lock()
	defer s.versions.mu.Unlock()
	s.stamp(m)
	return s.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (s *strictTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	obj = obj.DeepCopyObject()
	s.versions.mu.Lock()
	defer s.versions.mu.Unlock()
	m, err := s.check(gvr, obj, ns)
	if err != nil {
		return err
	}
	s.stamp(m)
	return s.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (s *strictTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	// obj is the patched copy the reaction returns: stamp it in place.
	s.versions.mu.Lock()
	defer s.versions.mu.Unlock()
	m, err := s.check(gvr, obj, ns)
	if err != nil {
		return err
	}
	s.stamp(m)
	return s.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

func (s *strictTracker) Apply(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	s.versions.mu.Lock()
	defer s.versions.mu.Unlock()
	if err := s.ObjectTracker.Apply(gvr, obj, ns, opts...); err != nil {
		return err
	}
	// Stamp the applied result: read it back and store it with a version.
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	stored, err := s.ObjectTracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return err
	}
	sm, err := meta.Accessor(stored)
	if err != nil {
		return err
	}
	s.stamp(sm)
	return s.ObjectTracker.Update(gvr, stored, ns)
}

// check returns the metadata of obj, or a conflict when obj carries a
// resourceVersion that is not the stored object's. The caller holds the
// counter's lock, which serializes the check with the write.
func (s *strictTracker) check(gvr schema.GroupVersionResource, obj runtime.Object, ns string) (metav1.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	if rv == "" {
		return m, nil
	}
	stored, err := s.ObjectTracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return nil, err
	}
	sm, err := meta.Accessor(stored)
	if err != nil {
		return nil, err
	}
	if have := sm.GetResourceVersion(); have != rv {
		return nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
			fmt.Errorf("the object has been modified: resourceVersion %s, stored %s; please apply your changes to the latest version and try again", rv, have))
	}
	return m, nil
}

// stamp gives m the next resourceVersion; the caller holds the lock.
func (s *strictTracker) stamp(m metav1.Object) {
	s.versions.next++
	m.SetResourceVersion(strconv.FormatInt(s.versions.next, 10))
}
