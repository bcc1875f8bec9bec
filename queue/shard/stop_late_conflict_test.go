package shard

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
)

// slowConflictClient, once armed, answers each renewal with a
// conflict just before its timeout (a slow API server), hangs every read
// of the Lease until its context ends, and hangs every update publishing
// that the replica left.
type slowConflictClient struct {
	*fake.Clientset
	armed    atomic.Bool
	renewals atomic.Int32 // renewals answered before arming
	slow     atomic.Int32 // renewals sent since arming
}

func (c *slowConflictClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return slowConflictCoordination{c.Clientset.CoordinationV1(), c}
}

type slowConflictCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *slowConflictClient
}

func (r slowConflictCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return slowConflictLeases{r.CoordinationV1Interface.Leases(ns), r.c}
}

type slowConflictLeases struct {
	coordinationv1client.LeaseInterface
	c *slowConflictClient
}

func (l slowConflictLeases) Update(ctx context.Context, o *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if !l.c.armed.Load() {
		got, err := l.LeaseInterface.Update(ctx, o, opts)
		if err == nil {
			l.c.renewals.Add(1)
		}
		return got, err
	}
	if strings.HasSuffix(o.Annotations[AnnotationView], " "+leftMark) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	l.c.slow.Add(1)
	// The API server's answer, a conflict, comes late but within the
	// request's timeout.
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, errors.New("a renewal without a deadline")
	}
	late := time.NewTimer(time.Until(deadline) * 9 / 10)
	defer late.Stop()
	select {
	case <-late.C:
		return nil, apierrors.NewConflict(leaseResource, o.Name, errors.New("the object has been modified"))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l slowConflictLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	if l.c.armed.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return l.LeaseInterface.Get(ctx, name, opts)
}

// TestStopAfterALateConflictWithinBudget: docs/design.md says a
// replica revoking its claims starts no renewal, "its leave waits only for
// the renewal in flight, so a stop with nothing to drain ends within that
// renewal's timeout plus RenewDeadline" (docs/operator.md reserves the
// same in the pod's grace period: "plus the timeout of a renewal in
// flight"). A renewal in flight at the stop that is answered with a
// conflict just before its timeout is followed, while revoking, by the
// read after the conflict, which may take RetryPeriod more before the
// leave and its RenewDeadline start.
func TestStopAfterALateConflictWithinBudget(t *testing.T) {
	client := &slowConflictClient{Clientset: fake.NewClientset()}
	cfg := Config{Client: client, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 25 * time.Second, RenewDeadline: 18 * time.Second, RetryPeriod: 6 * time.Second}
	_, cancel, done := startRun(t, cfg)
	waitUntil(t, done, "a renewal answered", func() bool { return client.renewals.Load() > 0 })
	client.armed.Store(true)
	waitUntil(t, done, "a renewal sent after arming", func() bool { return client.slow.Load() > 0 })
	start := time.Now()
	cancel() // a stop while that renewal is in flight, with nothing to drain
	write := lease.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	bound := write + cfg.RenewDeadline
	select {
	case err := <-done:
		if took := time.Since(start); took > bound+2*time.Second {
			t.Errorf("with nothing to drain, the stop took %s, over the renewal in flight (%s) plus RenewDeadline (%s) = %s; Run returned %v",
				took.Round(time.Millisecond), write, cfg.RenewDeadline, bound, err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not return")
	}
}
