package shard

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// lateCreateClient applies the creation of a Lease at once, reports it on
// applied, and loses the answer: the request hangs until its context ends.
type lateCreateClient struct {
	*fake.Clientset
	applied chan struct{}
}

func (c *lateCreateClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return lateCreateCoordination{c.Clientset.CoordinationV1(), c}
}

type lateCreateCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *lateCreateClient
}

func (l lateCreateCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return lateCreateLeases{l.CoordinationV1Interface.Leases(ns), l.c}
}

type lateCreateLeases struct {
	coordinationv1client.LeaseInterface
	c *lateCreateClient
}

func (l lateCreateLeases) Create(ctx context.Context, o *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if _, err := l.LeaseInterface.Create(ctx, o, opts); err != nil {
		return nil, err
	}
	close(l.c.applied)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestStopWhileJoiningDeletesALandedCreate: a replica stopped while its
// create, which the API server applied, waits for its answer reads its
// Lease once the create has ended and, finding it written by this
// process, deletes that version before Run returns: the others do not
// count as a live member, for LeaseDuration, a replica that never claims
// anything.
func TestStopWhileJoiningDeletesALandedCreate(t *testing.T) {
	c := &lateCreateClient{Clientset: fake.NewClientset(), applied: make(chan struct{})}
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
	l, err := c.Clientset.CoordinationV1().Leases("ops").Get(context.Background(), m.Name(), metav1.GetOptions{})
	if err == nil {
		t.Errorf("Run returned and left its Lease %s, publishing %q: the others count the replica as a live member for LeaseDuration (%s)",
			l.Name, l.Annotations[AnnotationView], cfg.LeaseDuration)
	}
}
