package leader_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// reviewLandsLaterClient models an API server that applies an acquiring
// create after its client abandoned it: the create hangs until its
// context ends, and is applied once the Lease has been read as not found
// after that (the release's read at the stop).
type reviewLandsLaterClient struct {
	*fake.Clientset
	createHung atomic.Bool
	readAfter  chan struct{}
	readOnce   sync.Once
	landed     chan struct{}
	wg         sync.WaitGroup
}

func (c *reviewLandsLaterClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return reviewLandsLaterCoordination{c.Clientset.CoordinationV1(), c}
}

type reviewLandsLaterCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *reviewLandsLaterClient
}

func (r reviewLandsLaterCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return reviewLandsLaterLeases{r.CoordinationV1Interface.Leases(ns), r.c}
}

type reviewLandsLaterLeases struct {
	coordinationv1client.LeaseInterface
	c *reviewLandsLaterClient
}

func (l reviewLandsLaterLeases) Create(ctx context.Context, o *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if !l.c.createHung.CompareAndSwap(false, true) {
		return nil, errors.New("only one create expected")
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

func (l reviewLandsLaterLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Get(ctx, name, opts)
	if l.c.createHung.Load() && apierrors.IsNotFound(err) {
		l.c.readOnce.Do(func() { close(l.c.readAfter) })
	}
	return got, err
}

// TestReviewStopDuringAcquireLateCreate: the package documentation says a
// stop releases the Lease "also one that came before the replica led (an
// acquiring request abandoned at the stop may have landed)". An acquiring
// create abandoned at the stop that the API server applies after the
// release read the Lease (and found none) leaves the Lease held by the
// stopped replica: a standby waits LeaseDuration.
func TestReviewStopDuringAcquireLateCreate(t *testing.T) {
	c := &reviewLandsLaterClient{Clientset: fake.NewClientset(), readAfter: make(chan struct{}), landed: make(chan struct{})}
	t.Cleanup(func() {
		c.readOnce.Do(func() { close(c.readAfter) })
		c.wg.Wait()
	})
	cfg := leader.Config{Client: c, Namespace: ns, Name: lease, Identity: "me",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runLeader(ctx, cfg, newRunner(nil))
	deadline := time.Now().Add(time.Minute)
	for !c.createHung.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no create was sent")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	wait(t, c.landed, "the abandoned create applied")
	if h := holder(t, c.Clientset); h != "" {
		t.Errorf("Run returned nil after a stop while acquiring, and its create, abandoned at the stop and applied after the release read the Lease, left it held by %q: a standby waits LeaseDuration (%s) to take over", h, cfg.LeaseDuration)
	}
}
