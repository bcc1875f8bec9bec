package leader_test

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

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// slowAnswerClient applies the slowUpdate-th Lease update at once but
// answers it only after delay (less than the request timeout, so the
// leader counts it as a successful renewal); every request after it hangs
// until its context ends, without reaching the API server.
type slowAnswerClient struct {
	*fake.Clientset
	slowUpdate int
	delay      time.Duration

	mu      sync.Mutex
	updates int
	applied time.Time // when the slow update landed on the API server
	hanging bool
}

func (c *slowAnswerClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return slowCoordination{c.Clientset.CoordinationV1(), c}
}

type slowCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *slowAnswerClient
}

func (s slowCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return slowLeases{s.CoordinationV1Interface.Leases(ns), s.c}
}

type slowLeases struct {
	coordinationv1client.LeaseInterface
	c *slowAnswerClient
}

func (l slowLeases) hang(ctx context.Context) error {
	l.c.mu.Lock()
	h := l.c.hanging
	l.c.mu.Unlock()
	if !h {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (l slowLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := l.hang(ctx); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Get(ctx, name, opts)
}

func (l slowLeases) Create(ctx context.Context, o *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := l.hang(ctx); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Create(ctx, o, opts)
}

func (l slowLeases) Update(ctx context.Context, o *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := l.hang(ctx); err != nil {
		return nil, err
	}
	l.c.mu.Lock()
	l.c.updates++
	slow := l.c.updates == l.c.slowUpdate
	l.c.mu.Unlock()
	got, err := l.LeaseInterface.Update(ctx, o, opts)
	if !slow || err != nil {
		return got, err
	}
	l.c.mu.Lock()
	l.c.applied = time.Now()
	l.c.hanging = true
	l.c.mu.Unlock()
	select {
	case <-time.After(l.c.delay):
		return got, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stopWatch records when the Runnable was told to stop (aborted or its
// context ended).
type stopWatch struct {
	started chan struct{}
	once    sync.Once
	mu      sync.Mutex
	stopped time.Time
}

func (s *stopWatch) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.IsZero() {
		s.stopped = time.Now()
	}
}

func (s *stopWatch) Abort(error) { s.stop() }

func (s *stopWatch) Run(ctx context.Context) error {
	s.once.Do(func() { close(s.started) })
	<-ctx.Done()
	s.stop()
	return nil
}

// A renewal that lands on the API server at once but whose answer comes
// just within the request timeout counts, for client-go's elector, from
// the answer, while a standby that saw it land takes the Lease over
// LeaseDuration later: the leader's Runnables stop before then, with the
// default durations and short ones, since the request timeout takes at
// most half of LeaseDuration - RenewDeadline - RetryPeriod.
func TestSlowlyAnsweredRenewalEndsWithinLeaseDuration(t *testing.T) {
	for _, tc := range []struct {
		name                string
		lease, renew, retry time.Duration
	}{
		{name: "defaults", lease: leader.DefaultLeaseDuration, renew: leader.DefaultRenewDeadline, retry: leader.DefaultRetryPeriod},
		{name: "short", lease: 4 * time.Second, renew: 3 * time.Second, retry: 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			slowAnsweredRenewal(t, leader.Config{
				Namespace: "default", Name: "slow-answer", Identity: "a",
				LeaseDuration: tc.lease, RenewDeadline: tc.renew, RetryPeriod: tc.retry,
			})
		})
	}
}

func slowAnsweredRenewal(t *testing.T, cfg leader.Config) {
	timeout := requestTimeout(cfg)
	c := &slowAnswerClient{Clientset: fake.NewClientset(), slowUpdate: 2, delay: timeout * 85 / 100}
	cfg.Client = c
	sw := &stopWatch{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- leader.Run(ctx, cfg, sw) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, leader.ErrLeaseLost)
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not lose the Lease")
	}
	c.mu.Lock()
	applied := c.applied
	c.mu.Unlock()
	sw.mu.Lock()
	stopped := sw.stopped
	sw.mu.Unlock()
	require.False(t, applied.IsZero(), "the slow renewal was never sent")
	require.False(t, stopped.IsZero())
	ranFor := stopped.Sub(applied)
	if ranFor >= cfg.LeaseDuration {
		t.Errorf("the leader's Runnable ran %v after its last renewal landed on the API server: a standby that read it then may lead after LeaseDuration (%v); two leaders for %v",
			ranFor.Round(time.Millisecond), cfg.LeaseDuration, (ranFor - cfg.LeaseDuration).Round(time.Millisecond))
	}
}
