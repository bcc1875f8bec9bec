package leader_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// lateAcquireClient applies the creation of the Lease at once, reports it
// on applied, and loses the answer: the request hangs until its context
// ends (a request abandoned on timeout, or at stop, whose write the API
// server applied).
type lateAcquireClient struct {
	*fake.Clientset
	applied chan struct{}
}

func (c *lateAcquireClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return lateAcquireCoordination{c.Clientset.CoordinationV1(), c}
}

type lateAcquireCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *lateAcquireClient
}

func (l lateAcquireCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return lateAcquireLeases{l.CoordinationV1Interface.Leases(ns), l.c}
}

type lateAcquireLeases struct {
	coordinationv1client.LeaseInterface
	c *lateAcquireClient
}

func (l lateAcquireLeases) Create(ctx context.Context, o *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if _, err := l.LeaseInterface.Create(ctx, o, opts); err != nil {
		return nil, err
	}
	close(l.c.applied)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestStopDuringAbandonedAcquireReleasesTheLease: a replica stopped
// while its acquiring create, which the API server applied, waits for its
// answer runs nothing, returns nil and gives the Lease back, though it
// never learnt that it won: a standby takes over at once instead of
// waiting LeaseDuration for a replica that is gone.
func TestStopDuringAbandonedAcquireReleasesTheLease(t *testing.T) {
	c := &lateAcquireClient{Clientset: fake.NewClientset(), applied: make(chan struct{})}
	cfg := leader.Config{Client: c, Namespace: ns, Name: lease, Identity: "me",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}
	r := newRunner(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runLeader(ctx, cfg, r)
	wait(t, c.applied, "the create applied")
	cancel()
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case <-r.started:
		t.Fatal("the runnable ran")
	default:
	}
	if h := holder(t, c.Clientset); h != "" {
		t.Errorf("Run returned and left the Lease held by %q: a standby waits LeaseDuration (%s) to take over", h, cfg.LeaseDuration)
	}
}
