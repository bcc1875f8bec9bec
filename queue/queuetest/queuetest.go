// Package queuetest runs controllers in tests: Start runs one over
// informer factories (fake clientsets, typically) for the rest of a test,
// and WaitIdle waits until it has nothing left to do.
//
//	kube := fake.NewClientset()
//	reconciletest.StrictVersions(kube) // 409 on stale updates, as a real API server
//	factory := informers.NewSharedInformerFactory(kube, 0)
//	ctrl := newMirror(t, kube, factory) // a *queue.Controller, or one embedding it
//	queuetest.Start(t, ctrl, factory)
//	queuetest.WaitIdle(t, ctrl, kube)
//	// assert on the objects in kube
package queuetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

// Controller is what Start runs: a *queue.Controller, or a type that
// embeds one.
type Controller interface {
	Run(ctx context.Context) error
	HasSynced() bool
	Len() int
	Active() int
}

// InformerFactory is what client-go's and code-generator's shared informer
// factories have in common.
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// ActionRecorder is the request log of a fake clientset: pass the clientset.
type ActionRecorder interface {
	Actions() []k8stesting.Action
}

// Timeout bounds every wait of this package.
const Timeout = 30 * time.Second

// Start starts the factories' informers and runs ctrl in the background,
// with a logger that writes through t, and returns once ctrl.HasSynced. When
// the test ends, Run is stopped and waited for (an error from it fails the
// test) and the informers are shut down. It fails the test if ctrl does not
// sync within Timeout.
func Start(t testing.TB, ctrl Controller, factories ...InformerFactory) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller: Run: %v", err)
			}
		case <-time.After(Timeout):
			t.Errorf("controller: Run did not return within %s of the end of the test", Timeout)
		}
		for _, f := range factories {
			f.Shutdown()
		}
	})
	waitFor(t, "the controller to sync", func() (bool, string) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Sprintf("Run returned early: %v", err)
		default:
		}
		return ctrl.HasSynced(), "not synced"
	})
}

// Quiet is how long WaitIdle requires nothing to happen.
const Quiet = 50 * time.Millisecond

// WaitIdle waits until ctrl has nothing to do: no key waits (delayed keys
// aside), no reconcile runs, and neither the controller nor any of the
// clients has done anything for Quiet, so that the events of the
// controller's last writes have reached its informers and handlers. Fake
// clientsets deliver events within microseconds; Quiet is a wide margin for
// that, not a sleep the test depends on. It fails the test if ctrl is not
// idle within Timeout.
func WaitIdle(t testing.TB, ctrl Controller, clients ...ActionRecorder) {
	t.Helper()
	var (
		since   time.Time
		actions int
	)
	waitFor(t, "the controller to be idle", func() (bool, string) {
		n := 0
		for _, c := range clients {
			n += len(c.Actions())
		}
		busy := ctrl.Len() > 0 || ctrl.Active() > 0
		if busy || n != actions || since.IsZero() {
			since, actions = time.Now(), n
			return false, fmt.Sprintf("%d keys waiting, %d reconciles running, %d requests", ctrl.Len(), ctrl.Active(), n)
		}
		return time.Since(since) >= Quiet, "settling"
	})
}

// waitFor polls cond until it holds, failing the test after Timeout with
// cond's last report.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		ok, report := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", Timeout, what, report)
			return
		}
		<-tick.C
	}
}
