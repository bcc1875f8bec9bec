// Package reconciletest runs a reconcile.Reconciler against fake clientsets
// in unit tests: it starts and syncs informer factories, runs one reconcile
// with a test logger, and reports the write requests it made (see Describe
// for their form). Strict makes fake clientsets behave like an API server
// where a controller can tell: resourceVersions and 409s, UIDs, generation,
// the status subresource, finalizers and garbage collection.
// For tests of a running controller, see package queue/queuetest.
//
// A typical table-driven test:
//
//	client := fake.NewClientset(src, stale)
//	factory := informers.NewSharedInformerFactory(client, 0)
//	r := newCopier(client, factory) // the reconciler under test, with listers from factory
//	reconciletest.StartInformers(t, factory)
//	out := reconciletest.Run(t, r, cache.ObjectName{Namespace: "ns", Name: "a"}, &client.Fake)
//	require.NoError(t, out.Err)
//	assert.Equal(t, []string{"create v1/configmaps ns/a-copy", "delete v1/configmaps ns/a-stale"}, reconciletest.Describe(out.Writes))
package reconciletest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// ActionRecorder is the request log of a fake clientset: pass &client.Fake.
type ActionRecorder interface {
	Actions() []k8stesting.Action
	ClearActions()
}

// SyncTimeout bounds how long StartInformers waits for the caches.
const SyncTimeout = 30 * time.Second

// StartInformers starts every factory's informers (those requested so far,
// for example by creating listers) and waits until their caches are
// synced; it fails the test if they do not sync within SyncTimeout. The
// informers are stopped, and their goroutines waited for, when the test ends.
//
// A synced informer may not watch yet. Over clientsets made Strict, what
// is written before its watch starts still reaches it; over client-go's
// plain fakes, an object removed in between stays in its cache.
func StartInformers(t testing.TB, factories ...informer.Factory) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		for _, f := range factories {
			f.Shutdown()
		}
	})
	timeout := make(chan struct{})
	timer := time.AfterFunc(SyncTimeout, func() { close(timeout) })
	defer timer.Stop()
	for _, f := range factories {
		f.Start(stop)
		for typ, ok := range f.WaitForCacheSync(timeout) {
			if !ok {
				t.Fatalf("informer for %v did not sync within %s", typ, SyncTimeout)
			}
		}
	}
}

// Context returns a context whose logger writes through t, cancelled when
// the test ends.
func Context(t testing.TB) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	return ctx
}

// Outcome is what one reconcile returned and wrote.
type Outcome struct {
	Result reconcile.Result
	Err    error
	// Writes are the requests that change state, in the order sent.
	Writes []k8stesting.Action
}

// Run clears the recorders' request logs, runs r once for key, and returns
// its result and error together with the write requests (everything but
// get, list and watch) it sent through the recorders.
func Run[K comparable](t testing.TB, r reconcile.Reconciler[K], key K, recorders ...ActionRecorder) Outcome {
	t.Helper()
	for _, rec := range recorders {
		rec.ClearActions()
	}
	res, err := r.Reconcile(Context(t), key)
	return Outcome{Result: res, Err: err, Writes: WriteActions(recorders...)}
}

// WriteActions returns the requests of the recorders that change state:
// every verb except get, list and watch.
func WriteActions(recorders ...ActionRecorder) []k8stesting.Action {
	var out []k8stesting.Action
	for _, rec := range recorders {
		for _, a := range rec.Actions() {
			if !slices.Contains([]string{"get", "list", "watch"}, a.GetVerb()) {
				out = append(out, a)
			}
		}
	}
	return out
}

// Describe renders actions as one line each, the easiest form to compare in
// a table test:
//
//	verb group/version/resource[/subresource] namespace/name
//
// For example "create apps/v1/deployments ns/web" and "update
// samplecontroller.k8s.io/v1alpha1/foos/status ns/example-foo". Resources of
// the core group have no group part ("delete v1/configmaps ns/settings"),
// cluster-scoped objects an empty namespace ("create v1/namespaces /team-a"),
// and actions without an object name an empty name ("list v1/pods ns/").
func Describe(actions []k8stesting.Action) []string {
	out := make([]string, 0, len(actions))
	for _, a := range actions {
		res := a.GetResource()
		gvr := res.Group + "/" + res.Version + "/" + res.Resource
		if res.Group == "" {
			gvr = res.Version + "/" + res.Resource
		}
		if sub := a.GetSubresource(); sub != "" {
			gvr += "/" + sub
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s", a.GetVerb(), gvr, a.GetNamespace(), ActionName(a)))
	}
	return out
}

// ActionName returns the name of the object an action is about: the name
// of a delete or patch, or of the object a create or update carries. It is
// empty for actions without one, such as list and watch.
func ActionName(a k8stesting.Action) string {
	switch a := a.(type) {
	case k8stesting.DeleteAction:
		return a.GetName()
	case k8stesting.PatchAction:
		return a.GetName()
	case interface{ GetObject() runtime.Object }:
		if m, err := meta.Accessor(a.GetObject()); err == nil {
			return m.GetName()
		}
	}
	return ""
}

// Object returns the object sent by a create or update action, as T. It
// fails the test if the action carries no object of that type.
func Object[T runtime.Object](t testing.TB, a k8stesting.Action) T {
	t.Helper()
	var zero T
	withObj, ok := a.(interface{ GetObject() runtime.Object })
	if !ok {
		t.Fatalf("action %s carries no object", Describe([]k8stesting.Action{a}))
		return zero
	}
	obj, ok := withObj.GetObject().(T)
	if !ok {
		t.Fatalf("action %s carries a %T, not a %T", Describe([]k8stesting.Action{a}), withObj.GetObject(), zero)
	}
	return obj
}
