package shard

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
)

// slowClient answers every Lease request of the Membership (not the
// informer's) after latency, as an API server under ordinary load does,
// or fails with the context's error if the request's context ends first.
// It records the shortest timeout a request was sent with.
type slowClient struct {
	*fake.Clientset
	latency  time.Duration
	mu       sync.Mutex
	shortest time.Duration
	gets     int
}

func (c *slowClient) wait(ctx context.Context, verb string) error {
	c.mu.Lock()
	if d, ok := ctx.Deadline(); ok {
		if t := time.Until(d); c.shortest == 0 || t < c.shortest {
			c.shortest = t
		}
	}
	if verb == "get" {
		c.gets++
	}
	c.mu.Unlock()
	select {
	case <-time.After(c.latency):
	case <-ctx.Done():
	}
	// The answer comes after latency; a client that gave up before then
	// does not get it (its context's timer may not have fired yet).
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return ctx.Err()
}

func (c *slowClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return slowCoordination{c.Clientset.CoordinationV1(), c}
}

type slowCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *slowClient
}

func (s slowCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return slowLeases{s.CoordinationV1Interface.Leases(ns), s.c}
}

type slowLeases struct {
	coordinationv1client.LeaseInterface
	c *slowClient
}

func (l slowLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := l.c.wait(ctx, "get"); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Get(ctx, name, opts)
}

func (l slowLeases) Create(ctx context.Context, o *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := l.c.wait(ctx, "create"); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Create(ctx, o, opts)
}

func (l slowLeases) Update(ctx context.Context, o *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := l.c.wait(ctx, "update"); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Update(ctx, o, opts)
}

func (l slowLeases) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if err := l.c.wait(ctx, "delete"); err != nil {
		return err
	}
	return l.LeaseInterface.Delete(ctx, name, opts)
}

// TestRequestTimeoutFloorCoversReads: Config refuses a write timeout
// under lease.MinRequestTimeout (100ms), "one shorter leaves a real API
// server no time to answer, so every request would be abandoned and the
// Lease never taken nor kept". The reads and deletes, though, are sent
// with RetryPeriod as their timeout, which Config lets go down to
// anything above zero. With RetryPeriod 20ms (write timeout 990ms, so
// accepted) and an API server answering in 50ms, a replica restarted
// under the identity of a process that is gone (a pod name) meets its
// former Lease, reads it to take it over, abandons that read every time,
// and never joins. Config must either refuse these timings, naming the
// floor, or the replica must join.
func TestRequestTimeoutFloorCoversReads(t *testing.T) {
	former := formerLease("pod-0", time.Now().Add(-time.Minute))
	c := &slowClient{Clientset: fake.NewClientset(former), latency: 50 * time.Millisecond}
	cfg := Config{Client: c, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 20 * time.Millisecond}
	m, err := New(cfg)
	if err != nil {
		// Refusing these timings keeps the floor's promise as well as
		// joining does, if the refusal names the floor.
		require.ErrorContains(t, err, lease.MinRequestTimeout.String(), "Config refused RetryPeriod %s, but not for the request timeout's floor", cfg.RetryPeriod)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	joined := func() bool {
		l, err := c.Clientset.CoordinationV1().Leases("ops").Get(context.Background(), m.Name(), metav1.GetOptions{})
		return err == nil && l.Annotations[annotationWriter] != ""
	}
	deadline := time.Now().Add(5 * time.Second)
	for !joined() && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("Run returned %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	ok := joined()
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Error("Run did not return")
	}
	c.mu.Lock()
	shortest, gets := c.shortest, c.gets
	c.mu.Unlock()
	if !ok {
		t.Errorf("Config accepted (write timeout %s), yet with an API server answering in %s the replica has not taken over its former Lease after 5s: %d reads of it sent, the shortest request timeout %s, under lease.MinRequestTimeout (%s)",
			lease.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod), c.latency, gets, shortest.Round(time.Millisecond), lease.MinRequestTimeout)
	}
}
