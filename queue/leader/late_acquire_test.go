package leader_test

import (
	"context"
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

// landsLaterClient models an API server that applies an acquiring
// create after its client abandoned it: the first create hangs until its
// context ends, and is applied once the Lease has been read as not found
// after that (the release's read at the stop) and the test closed stopped
// (once Run returned). Later creates are applied at once.
type landsLaterClient struct {
	*fake.Clientset
	createHung atomic.Bool
	readAfter  chan struct{}
	readOnce   sync.Once
	stopped    chan struct{}
	stopOnce   sync.Once
	attempted  chan struct{} // closed once the abandoned create was applied or refused
	wg         sync.WaitGroup
}

func (c *landsLaterClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return landsLaterCoordination{c.Clientset.CoordinationV1(), c}
}

type landsLaterCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *landsLaterClient
}

func (r landsLaterCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return landsLaterLeases{r.CoordinationV1Interface.Leases(ns), r.c}
}

type landsLaterLeases struct {
	coordinationv1client.LeaseInterface
	c *landsLaterClient
}

func (l landsLaterLeases) Create(ctx context.Context, o *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if !l.c.createHung.CompareAndSwap(false, true) {
		return l.LeaseInterface.Create(ctx, o, metav1.CreateOptions{})
	}
	<-ctx.Done()
	o = o.DeepCopy()
	l.c.wg.Go(func() {
		<-l.c.readAfter
		<-l.c.stopped
		_, _ = l.LeaseInterface.Create(context.Background(), o, metav1.CreateOptions{})
		close(l.c.attempted)
	})
	return nil, ctx.Err()
}

func (l landsLaterLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Get(ctx, name, opts)
	if l.c.createHung.Load() && apierrors.IsNotFound(err) {
		l.c.readOnce.Do(func() { close(l.c.readAfter) })
	}
	return got, err
}

// TestStopDuringAcquireLateCreate: the package documentation says a
// stop releases the Lease "also one that came before the replica led (an
// acquiring request abandoned at the stop may have landed)". An acquiring
// create abandoned at the stop that the API server applies after the
// release read the Lease (and found none), even after Run returned, must
// not leave the Lease held by the stopped replica (a standby would wait
// LeaseDuration): the release creates the Lease released, and the late
// create fails.
func TestStopDuringAcquireLateCreate(t *testing.T) {
	c := &landsLaterClient{Clientset: fake.NewClientset(), readAfter: make(chan struct{}), stopped: make(chan struct{}), attempted: make(chan struct{})}
	t.Cleanup(func() {
		c.readOnce.Do(func() { close(c.readAfter) })
		c.stopOnce.Do(func() { close(c.stopped) })
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
	c.stopOnce.Do(func() { close(c.stopped) })
	wait(t, c.attempted, "the abandoned create sent on to the API server")
	if h := holder(t, c.Clientset); h != "" {
		t.Errorf("Run returned nil after a stop while acquiring, and its create, abandoned at the stop and applied after the release read the Lease, left it held by %q: a standby waits LeaseDuration (%s) to take over", h, cfg.LeaseDuration)
	}
}
