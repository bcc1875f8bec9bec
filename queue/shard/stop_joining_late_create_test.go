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

// reviewLateCreateClient models an API server that applies a create after
// its client abandoned it: the create hangs until its context ends and
// fails with the context's error, and the API server applies it once the
// Lease has been read as not found (the read a stop while joining sends
// after the abandoned create), as the simulation's "requests that hang
// until the timeout the driver gave them and land later" do.
type reviewLateCreateClient struct {
	*fake.Clientset
	createHung atomic.Bool
	readAfter  chan struct{} // closed once a read after the hung create found nothing
	readOnce   sync.Once
	landed     chan struct{} // closed once the abandoned create was applied
	wg         sync.WaitGroup
}

func (c *reviewLateCreateClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return reviewLateCreateCoordination{c.Clientset.CoordinationV1(), c}
}

type reviewLateCreateCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *reviewLateCreateClient
}

func (r reviewLateCreateCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return reviewLateCreateLeases{r.CoordinationV1Interface.Leases(ns), r.c}
}

type reviewLateCreateLeases struct {
	coordinationv1client.LeaseInterface
	c *reviewLateCreateClient
}

func (l reviewLateCreateLeases) Create(ctx context.Context, o *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if !l.c.createHung.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("only one create expected")
	}
	<-ctx.Done()
	o = o.DeepCopy()
	l.c.wg.Go(func() {
		<-l.c.readAfter
		if _, err := l.LeaseInterface.Create(context.Background(), o, metav1.CreateOptions{}); err == nil {
			close(l.c.landed)
		}
	})
	return nil, ctx.Err()
}

func (l reviewLateCreateLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Get(ctx, name, opts)
	if l.c.createHung.Load() && apierrors.IsNotFound(err) {
		l.c.readOnce.Do(func() { close(l.c.readAfter) })
	}
	return got, err
}

// TestReviewStopWhileJoiningLateCreate: docs/design.md: "A stop must not
// leave a Lease that makes the others wait"; Run's doc: at a cancellation
// before it joined "it waits for a create in flight, deletes the Lease if
// a create of this process landed". A create abandoned at its timeout
// that the API server applies after the stop's read of the Lease (which
// found nothing) is left behind: a live member of the group to the others
// for a whole LeaseDuration, and the keys rendezvous hashing gives it wait
// that long though the replica stopped normally.
func TestReviewStopWhileJoiningLateCreate(t *testing.T) {
	base := fake.NewClientset()
	cfgB := Config{Client: base, Namespace: "ops", Group: "g", Identity: "pod-b",
		LeaseDuration: 6 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}
	late := &reviewLateCreateClient{Clientset: base, readAfter: make(chan struct{}), landed: make(chan struct{})}
	t.Cleanup(func() {
		late.readOnce.Do(func() { close(late.readAfter) })
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
	select {
	case <-late.landed:
	case <-time.After(time.Minute):
		t.Fatal("the abandoned create was not applied")
	}
	poll("b sees a's Lease", time.Minute, func() bool { return !gb.Owns(key) })
	gone := poll("b owns a's key again", time.Minute, func() bool { return gb.Owns(key) })
	if gone > cfgB.RenewDeadline {
		t.Errorf("a stopped normally (while joining), but its create, abandoned at its timeout and applied after the stop read the Lease, left a Lease that b counted as a live member: b did not own a's key for %s (LeaseDuration %s)",
			gone.Round(time.Millisecond), cfgB.LeaseDuration)
	}
}
