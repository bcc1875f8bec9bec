package shard

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// joinLateCreateClient models an API server that applies a create after
// its client abandoned it: the first create hangs until its context ends
// and fails with the context's error, and the API server applies it once
// the Lease has been read as not found (the read a stop while joining
// sends after the abandoned create) and the test closes stopped (once
// Run returned), as the simulation's "requests that hang until the
// timeout the driver gave them and land later" do. Later creates (the
// stop's own) are applied at once.
type joinLateCreateClient struct {
	*fake.Clientset
	createHung atomic.Bool
	readAfter  chan struct{} // closed once a read after the hung create found nothing
	readOnce   sync.Once
	stopped    chan struct{} // closed by the test once Run returned
	stopOnce   sync.Once
	attempted  chan struct{} // closed once the abandoned create was applied or refused
	applied    atomic.Bool   // it was applied
	wg         sync.WaitGroup
}

func (c *joinLateCreateClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return joinLateCreateCoordination{c.Clientset.CoordinationV1(), c}
}

type joinLateCreateCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *joinLateCreateClient
}

func (r joinLateCreateCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return joinLateCreateLeases{r.CoordinationV1Interface.Leases(ns), r.c}
}

type joinLateCreateLeases struct {
	coordinationv1client.LeaseInterface
	c *joinLateCreateClient
}

func (l joinLateCreateLeases) Create(ctx context.Context, o *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if !l.c.createHung.CompareAndSwap(false, true) {
		return l.LeaseInterface.Create(ctx, o, metav1.CreateOptions{})
	}
	<-ctx.Done()
	o = o.DeepCopy()
	l.c.wg.Go(func() {
		<-l.c.readAfter
		<-l.c.stopped
		_, err := l.LeaseInterface.Create(context.Background(), o, metav1.CreateOptions{})
		l.c.applied.Store(err == nil)
		close(l.c.attempted)
	})
	return nil, ctx.Err()
}

func (l joinLateCreateLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Get(ctx, name, opts)
	if l.c.createHung.Load() && apierrors.IsNotFound(err) {
		l.c.readOnce.Do(func() { close(l.c.readAfter) })
	}
	return got, err
}

// TestStopWhileJoiningLateCreate: docs/design.md: "A stop must not
// leave a Lease that makes the others wait". A create abandoned at its
// timeout that the API server applies after the stop's read of the Lease
// (which found nothing), even after Run returned, must not leave a live
// member of the group to the others (for a whole LeaseDuration, the keys
// rendezvous hashing gives it waiting that long): the stop leaves the
// Lease marked as left, so that the late create fails, and the others
// keep the keys and delete that Lease as a departed member's.
func TestStopWhileJoiningLateCreate(t *testing.T) {
	base := fake.NewClientset()
	cfgB := Config{Client: base, Namespace: "ops", Group: "g", Identity: "pod-b",
		LeaseDuration: 6 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}
	late := &joinLateCreateClient{Clientset: base, readAfter: make(chan struct{}), stopped: make(chan struct{}), attempted: make(chan struct{})}
	t.Cleanup(func() {
		late.readOnce.Do(func() { close(late.readAfter) })
		late.stopOnce.Do(func() { close(late.stopped) })
		late.wg.Wait()
	})
	cfgA := cfgB
	cfgA.Client, cfgA.Identity = late, "pod-a"
	a, err := New(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	// A key that the two-member group gives to a.
	var key string
	for i := 0; ; i++ {
		key = fmt.Sprintf("ns/k%d", i)
		if Assign([]string{a.Name(), b.Name()}, key) == a.Name() {
			break
		}
	}
	gb := NewGate(b, Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{key} }})

	ctxB, cancelB := context.WithCancel(context.Background())
	doneB := make(chan error, 1)
	go func() { doneB <- b.Run(ctxB) }()
	t.Cleanup(func() {
		cancelB()
		select {
		case <-doneB:
		case <-time.After(time.Minute):
			t.Error("b's Run did not return")
		}
	})
	poll := func(what string, within time.Duration, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > within {
				t.Fatalf("not within %s: %s", within, what)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	poll("b alone owns the key", time.Minute, func() bool { return b.HasSynced() && gb.Owns(key) })

	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA) }()
	poll("a's create is sent", time.Minute, late.createHung.Load)
	cancelA() // a stops while joining, its create hanging
	select {
	case err := <-doneA:
		t.Logf("a's Run returned %v", err)
	case <-time.After(time.Minute):
		t.Fatal("a's Run did not return")
	}
	late.stopOnce.Do(func() { close(late.stopped) })
	select {
	case <-late.attempted:
	case <-time.After(time.Minute):
		t.Fatal("the abandoned create was never sent on to the API server")
	}
	l, err := base.CoordinationV1().Leases("ops").Get(context.Background(), a.Name(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case !isLeft(l):
		t.Errorf("a stopped while joining, and its create, abandoned at its timeout and applied after the stop read the Lease (applied: %t), left a live Lease %q: the others count a as a member for LeaseDuration (%s)",
			late.applied.Load(), l.Annotations[AnnotationView], cfgB.LeaseDuration)
	}
	gone := poll("b counts only itself a member and owns a's key", time.Minute, func() bool {
		return gb.Owns(key) && len(b.Members()) == 1
	})
	if gone > cfgB.RenewDeadline {
		t.Errorf("a stopped normally (while joining), but its create, abandoned at its timeout and applied after the stop read the Lease, left a Lease that b counted as a live member: b did not own a's key for %s (LeaseDuration %s)",
			gone.Round(time.Millisecond), cfgB.LeaseDuration)
	}
	// The Lease marked as left goes as a departed member's does: b
	// deletes it once it has not changed for two LeaseDurations.
	poll("b deletes a's Lease", time.Minute, func() bool {
		_, err := base.CoordinationV1().Leases("ops").Get(context.Background(), a.Name(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
