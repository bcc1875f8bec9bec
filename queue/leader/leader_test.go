package leader_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	ns, lease = "ops", "foo-controller"
	waitFor   = 20 * time.Second
)

// fastConfig is a Config with short durations, for tests.
func fastConfig(client *fake.Clientset, identity string) leader.Config {
	return leader.Config{
		Client: client, Namespace: ns, Name: lease, Identity: identity,
		LeaseDuration: time.Second, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 100 * time.Millisecond,
	}
}

// holder returns the Lease's holder ("" when released or absent).
func holder(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases(ns).Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// heldBy returns a Lease held by id, renewed at renewed.
func heldBy(id string, renewed time.Time, seconds int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lease},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &id,
			LeaseDurationSeconds: &seconds,
			AcquireTime:          &metav1.MicroTime{Time: renewed},
			RenewTime:            &metav1.MicroTime{Time: renewed},
		},
	}
}

// runner is a Runnable that reports when it starts and runs until its
// context ends, then runs drain.
type runner struct {
	started chan struct{}
	drain   func(ctx context.Context) error
}

func newRunner(drain func(ctx context.Context) error) *runner {
	return &runner{started: make(chan struct{}), drain: drain}
}

func (r *runner) Run(ctx context.Context) error {
	close(r.started)
	<-ctx.Done()
	if r.drain != nil {
		return r.drain(ctx)
	}
	return nil
}

// runLeader runs leader.Run in the background.
func runLeader(ctx context.Context, cfg leader.Config, rs ...leader.Runnable) <-chan error {
	done := make(chan error, 1)
	go func() { done <- leader.Run(ctx, cfg, rs...) }()
	return done
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting: %s", what)
	}
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitFor):
		t.Fatal("leader.Run did not return")
		return nil
	}
}

// A normal stop drains the runnables while the Lease is held, and releases
// it only afterwards.
func TestStopDrainsThenReleases(t *testing.T) {
	client := fake.NewClientset()
	var heldWhileDraining atomic.Value
	r := newRunner(func(context.Context) error {
		heldWhileDraining.Store(holder(t, client))
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := runLeader(ctx, fastConfig(client, "me"), r)
	wait(t, r.started, "the runnable starts once leading")
	assert.Equal(t, "me", holder(t, client))
	cancel()
	require.NoError(t, result(t, done))
	assert.Equal(t, "me", heldWhileDraining.Load(), "the Lease is held while the runnable drains")
	assert.Empty(t, holder(t, client), "the Lease is released after the runnable returned")
}

// A standby replica runs nothing while another holds the Lease, and takes
// it over once the Lease expires.
func TestStandbyThenTakeover(t *testing.T) {
	client := fake.NewClientset(heldBy("other", time.Now(), 3))
	r := newRunner(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runLeader(ctx, fastConfig(client, "me"), r)
	// While the other's Lease is fresh, nothing runs; renew it a few times
	// (well within its 3 s, which the elector measures from when it saw each
	// renewal).
	for range 5 {
		select {
		case <-r.started:
			t.Fatal("a standby replica ran its runnables")
		case <-time.After(300 * time.Millisecond):
		}
		_, err := client.CoordinationV1().Leases(ns).Update(ctx, heldBy("other", time.Now(), 3), metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	// The other stops renewing: after the lease duration, this replica leads.
	wait(t, r.started, "the standby takes the expired Lease over")
	assert.Equal(t, "me", holder(t, client))
	cancel()
	require.NoError(t, result(t, done))
}

func TestStandbyStopsWithoutRunning(t *testing.T) {
	client := fake.NewClientset(heldBy("other", time.Now(), 3600))
	r := newRunner(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := runLeader(ctx, fastConfig(client, "me"), r)
	require.Eventually(t, func() bool { return len(client.Actions()) >= 2 }, waitFor, time.Millisecond, "the candidate tried")
	cancel()
	require.NoError(t, result(t, done))
	select {
	case <-r.started:
		t.Fatal("a standby replica ran its runnables")
	default:
	}
	assert.Equal(t, "other", holder(t, client), "the other's Lease is left alone")
}

// renewals is a switch, installed before the clientset is used, that makes
// every Lease update fail once turned off, and reports the holders of the
// updates attempted after that.
type renewals struct {
	failing  atomic.Bool
	mu       sync.Mutex
	attempts []string
}

func breakable(client *fake.Clientset) *renewals {
	r := &renewals{}
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !r.failing.Load() {
			return false, nil, nil
		}
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		r.mu.Lock()
		r.attempts = append(r.attempts, ptr.Deref(l.Spec.HolderIdentity, ""))
		r.mu.Unlock()
		return true, nil, errors.New("the API server is unreachable")
	})
	return r
}

func (r *renewals) fail() { r.failing.Store(true) }

func (r *renewals) attempted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.attempts...)
}

// abortable is a Runnable with a hard stop.
type abortable struct {
	*runner
	cause atomic.Value
}

func (a *abortable) Abort(cause error) { a.cause.Store(cause) }

// A lost Lease aborts the runnables at once, also during a normal stop,
// and Run reports it; the Lease is not written again.
func TestLostLease(t *testing.T) {
	for _, duringStop := range []bool{false, true} {
		name := "while running"
		if duringStop {
			name = "while draining after a normal stop"
		}
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			renew := breakable(client)
			aborted := make(chan struct{})
			a := &abortable{}
			a.runner = newRunner(func(context.Context) error {
				// Drains until aborted: only the lost Lease ends it.
				require.Eventually(t, func() bool { return a.cause.Load() != nil }, waitFor, time.Millisecond)
				close(aborted)
				return nil
			})
			plain := newRunner(nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := runLeader(ctx, fastConfig(client, "me"), a, plain)
			wait(t, a.started, "leading")
			wait(t, plain.started, "leading")
			if duringStop {
				cancel()
			}
			renew.fail()
			wait(t, aborted, "the runnable is aborted")
			err := result(t, done)
			require.ErrorIs(t, err, leader.ErrLeaseLost)
			assert.ErrorIs(t, a.cause.Load().(error), leader.ErrLeaseLost)
			assert.NotEmpty(t, renew.attempted(), "renewals were tried")
			assert.NotContains(t, renew.attempted(), "", "no release is attempted after the Lease was lost")
		})
	}
}

// With a queue.Controller, a lost Lease cancels an in-flight reconcile at
// once, with the loss as its context's cause.
func TestLostLeaseCancelsReconciles(t *testing.T) {
	client := fake.NewClientset()
	renew := breakable(client)
	entered := make(chan struct{})
	var cause atomic.Value
	ctrl, err := queue.New("leader", reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		close(entered)
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return reconcile.Result{}, ctx.Err()
	}), queue.WithShutdownTimeout(time.Hour))
	require.NoError(t, err)
	ctrl.Add("a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runLeader(ctx, fastConfig(client, "me"), ctrl)
	wait(t, entered, "the reconcile runs once leading")
	renew.fail()
	err = result(t, done)
	require.ErrorIs(t, err, leader.ErrLeaseLost)
	require.ErrorIs(t, err, queue.ErrAborted)
	assert.ErrorIs(t, cause.Load().(error), leader.ErrLeaseLost)
}

// The first runnable error stops the others; the Lease is released.
func TestRunnableErrorStopsOthers(t *testing.T) {
	client := fake.NewClientset()
	boom := errors.New("boom")
	failing := leader.RunnableFunc(func(context.Context) error { return boom })
	other := newRunner(nil)
	err := leader.Run(context.Background(), fastConfig(client, "me"), failing, other)
	require.ErrorIs(t, err, boom)
	wait(t, other.started, "the other runnable ran")
	assert.Empty(t, holder(t, client), "released")
}

func TestConfig(t *testing.T) {
	client := fake.NewClientset()
	tests := []struct {
		name    string
		cfg     leader.Config
		wantErr string
	}{
		{name: "no client", cfg: leader.Config{Namespace: ns, Name: lease}, wantErr: "needs a Client"},
		{name: "no name", cfg: leader.Config{Client: client, Namespace: ns}, wantErr: "needs a Client, a Namespace and a Name"},
		{name: "name not a Lease name", cfg: leader.Config{Client: client, Namespace: ns, Name: "Foo_controller"}, wantErr: "Lease name"},
		{name: "lease too short for renew and retry", cfg: leader.Config{Client: client, Namespace: ns, Name: lease,
			LeaseDuration: 10 * time.Second, RenewDeadline: 9 * time.Second, RetryPeriod: 2 * time.Second}, wantErr: "lease duration"},
		{name: "renew deadline too short for retry", cfg: leader.Config{Client: client, Namespace: ns, Name: lease,
			LeaseDuration: 30 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 2 * time.Second}, wantErr: "renew deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := leader.Run(context.Background(), tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	// Defaults and the generated identity: a standby that stops at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, leader.Run(ctx, leader.Config{Client: fake.NewClientset(heldBy("other", time.Now(), 3600)), Namespace: ns, Name: lease}))
}
