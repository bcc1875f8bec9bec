package leader_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// stamped is a Runnable that records when it started and when it was told
// to stop (aborted or its context ended).
type stamped struct {
	started chan struct{}
	mu      sync.Mutex
	start   time.Time
	stopped time.Time
}

func newStamped() *stamped { return &stamped{started: make(chan struct{})} }

func (s *stamped) Run(ctx context.Context) error {
	s.mu.Lock()
	s.start = time.Now()
	s.mu.Unlock()
	close(s.started)
	<-ctx.Done()
	s.stop()
	return nil
}

func (s *stamped) Abort(error) { s.stop() }

func (s *stamped) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.IsZero() {
		s.stopped = time.Now()
	}
}

func (s *stamped) times() (start, stopped time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.start, s.stopped
}

// TestReviewFractionalLeaseDurationTwoLeaders: Config accepts any
// LeaseDuration > RenewDeadline + RetryPeriod, and the package doc
// promises that a candidate takes over no sooner than LeaseDuration after
// it saw the last renewal land, while the leader gives up at most
// RetryPeriod + RenewDeadline after its answer. But client-go's elector
// writes int(LeaseDuration / time.Second) into the Lease's
// LeaseDurationSeconds, and a standby judges the Lease by that record,
// not by its own Config: with LeaseDuration 1.9s the standby waits 1s.
// Leader "a" stops renewing (all its requests hang) and keeps running its
// Runnable for RetryPeriod + RenewDeadline = 1.6s after its last renewal;
// standby "b" takes over about 1s after it saw that renewal: two leaders.
func TestReviewFractionalLeaseDurationTwoLeaders(t *testing.T) {
	shared := fake.NewClientset()
	hangA := newLeaseClient(nil)
	hangA.Clientset = shared
	cfg := func(c leader.Config) leader.Config {
		c.Namespace, c.Name = ns, lease
		c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 1900*time.Millisecond, 1500*time.Millisecond, 100*time.Millisecond
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	a := newStamped()
	doneA := runLeader(ctx, cfg(leader.Config{Client: hangA, Identity: "a"}), a)
	wait(t, a.started, "a leads")
	time.Sleep(300 * time.Millisecond) // a few renewals

	b := newStamped()
	doneB := runLeader(ctx, cfg(leader.Config{Client: shared, Identity: "b"}), b)
	time.Sleep(300 * time.Millisecond) // b has seen a's renewals
	hangA.setChooser(func(string, int) fate { return hang })
	l, err := shared.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
	require.NoError(t, err)
	t.Logf("a's Lease says LeaseDurationSeconds=%d for LeaseDuration %s", *l.Spec.LeaseDurationSeconds, cfg(leader.Config{}).LeaseDuration)

	wait(t, b.started, "b leads")
	_ = result(t, doneA)
	cancel()
	_ = result(t, doneB)
	_, aStopped := a.times()
	bStart, _ := b.times()
	require.False(t, aStopped.IsZero())
	if bStart.Before(aStopped) {
		t.Errorf("two leaders for %v: b's Runnable started while a's still ran (the Lease record says %ds, LeaseDuration is %s)",
			aStopped.Sub(bStart).Round(time.Millisecond), *l.Spec.LeaseDurationSeconds, cfg(leader.Config{}).LeaseDuration)
	}
}

// TestReviewSubSecondLeaseDurationTwoLeaders: the same defect with the
// package's own test timings (fastConfig: 800ms, 400ms, 100ms), which
// Config accepts: the Lease record says LeaseDurationSeconds=0, so a
// standby finds the Lease expired at every attempt and takes it over from
// a leader that renews it without fault.
func TestReviewSubSecondLeaseDurationTwoLeaders(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := newStamped(), newStamped()
	doneA := runLeader(ctx, fastConfig(client, "a"), a)
	wait(t, a.started, "a leads")
	doneB := runLeader(ctx, fastConfig(client, "b"), b)
	select {
	case <-b.started:
	case <-time.After(3 * time.Second):
		cancel()
		_, _ = result(t, doneA), result(t, doneB)
		return // b waits: fine
	}
	time.Sleep(time.Second)
	_, aStopped := a.times()
	bStart, bStopped := b.times()
	cancel()
	_, _ = result(t, doneA), result(t, doneB)
	if aStopped.IsZero() && bStopped.IsZero() {
		t.Errorf("two leaders with LeaseDuration %s and no fault: b's Runnable started %v ago and both still run",
			fastConfig(client, "a").LeaseDuration, time.Since(bStart).Round(time.Millisecond))
	}
}
