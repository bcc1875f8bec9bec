package shard

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// stopJoinClient applies a create at once and loses its answer (the
// request hangs until its context ends), and makes the first delete hang
// until its context ends without applying it.
type stopJoinClient struct {
	*fake.Clientset
	applied    chan struct{}
	deleteHung atomic.Bool
}

func (c *stopJoinClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return stopJoinCoordination{c.Clientset.CoordinationV1(), c}
}

type stopJoinCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *stopJoinClient
}

func (s stopJoinCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return stopJoinLeases{s.CoordinationV1Interface.Leases(ns), s.c}
}

type stopJoinLeases struct {
	coordinationv1client.LeaseInterface
	c *stopJoinClient
}

func (l stopJoinLeases) Create(ctx context.Context, o *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if _, err := l.LeaseInterface.Create(ctx, o, opts); err != nil {
		return nil, err
	}
	close(l.c.applied)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (l stopJoinLeases) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if l.c.deleteHung.CompareAndSwap(false, true) {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.LeaseInterface.Delete(ctx, name, opts)
}

// TestStopWhileJoiningSurvivesOneHungDelete: a replica stopped while
// joining, whose create landed, deletes its Lease before Run returns so
// that the others do not count, for LeaseDuration, a live member that
// claims nothing. Like the update publishing that a replica left (retried
// up to three times since one hung leave left the Lease behind), one
// hung request must not defeat that: here the single delete hangs once
// and is never tried again.
func TestStopWhileJoiningSurvivesOneHungDelete(t *testing.T) {
	c := &stopJoinClient{Clientset: fake.NewClientset(), applied: make(chan struct{})}
	cfg := Config{Client: c, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}
	m, cancel, done := startRun(t, cfg)
	select {
	case <-c.applied:
	case <-time.After(20 * time.Second):
		t.Fatal("the create was not sent")
	}
	cancel()
	select {
	case err := <-done:
		t.Logf("Run returned %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	if !c.deleteHung.Load() {
		t.Fatal("no delete was sent")
	}
	l, err := c.Clientset.CoordinationV1().Leases("ops").Get(context.Background(), m.Name(), metav1.GetOptions{})
	if err == nil {
		t.Errorf("after one hung delete, Run returned and left its Lease %s, publishing %q, a live member's: the others count it for LeaseDuration (%s) and its keys wait",
			l.Name, l.Annotations[AnnotationView], cfg.LeaseDuration)
	}
}
