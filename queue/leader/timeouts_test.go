package leader_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	leaserules "github.com/ctrlkit/ctrlkit/queue/internal/lease"
	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// hangConfig has timings short enough for a test and long enough that a
// busy machine's delays do not cost the leader its Lease: a request may
// take lease.RequestTimeout(4s, 3s, 250ms) = 1s.
func hangConfig(client *leaseClient, identity string) leader.Config {
	return leader.Config{
		Client: client, Namespace: ns, Name: lease, Identity: identity,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond,
	}
}

func requestTimeout(cfg leader.Config) time.Duration {
	return leaserules.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
}

// leaseRequest is one Lease request as the API server saw it.
type leaseRequest struct {
	verb        string // get, create, update or delete
	n           int    // the how-manieth request of its verb, from 1
	sent        time.Time
	deadline    time.Time
	hasDeadline bool
	hung        bool
	ended       time.Time // when a hung request gave up
	failed      bool      // answered with an error
}

func (r leaseRequest) String() string {
	return fmt.Sprintf("%s #%d", r.verb, r.n)
}

// fate is what becomes of a Lease request.
type fate int

const (
	answer fate = iota // the fake clientset answers it
	hang               // it blocks until its context ends, and fails with the context's error
	fail               // it fails at once with a server error
)

// chooser picks the fate of the n-th request (from 1) of verb.
type chooser func(verb string, n int) fate

// leaseClient is a fake clientset whose Lease requests are recorded and
// may hang or fail, as choose decides. Like a real client, it refuses a
// request whose context has ended.
type leaseClient struct {
	*fake.Clientset
	mu       sync.Mutex
	requests []leaseRequest
	counts   map[string]int
	choose   chooser
}

func newLeaseClient(choose chooser, objs ...*coordinationv1.Lease) *leaseClient {
	c := &leaseClient{Clientset: fake.NewClientset(), counts: map[string]int{}, choose: choose}
	for _, o := range objs {
		if err := c.Clientset.Tracker().Add(o); err != nil {
			panic(err)
		}
	}
	return c
}

func (c *leaseClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return coordinationClient{c.Clientset.CoordinationV1(), c}
}

// setChooser replaces the choice of the requests' fates.
func (c *leaseClient) setChooser(choose chooser) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.choose = choose
}

// enter records a request, hangs it if chosen, and returns its index.
func (c *leaseClient) enter(ctx context.Context, verb string) (int, error) {
	c.mu.Lock()
	c.counts[verb]++
	r := leaseRequest{verb: verb, n: c.counts[verb], sent: time.Now()}
	r.deadline, r.hasDeadline = ctx.Deadline()
	f := answer
	if c.choose != nil {
		f = c.choose(verb, r.n)
	}
	r.hung = f == hang
	i := len(c.requests)
	c.requests = append(c.requests, r)
	c.mu.Unlock()
	if f == fail {
		c.answered(i, errServer)
		return i, errServer
	}
	if r.hung {
		<-ctx.Done()
		c.mu.Lock()
		c.requests[i].ended = time.Now()
		c.requests[i].failed = true
		c.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		c.mu.Lock()
		c.requests[i].failed = true
		c.mu.Unlock()
		return i, err
	}
	return i, nil
}

var errServer = apierrors.NewInternalError(errors.New("etcdserver: leader changed"))

// answered records that the i-th request was answered with err.
func (c *leaseClient) answered(i int, err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[i].failed = true
}

// recorded returns the requests so far.
func (c *leaseClient) recorded() []leaseRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]leaseRequest(nil), c.requests...)
}

// succeededAfter counts the requests of verb that were sent after t and
// succeeded.
func (c *leaseClient) succeededAfter(verb string, t time.Time) int {
	n := 0
	for _, r := range c.recorded() {
		if r.verb == verb && r.sent.After(t) && !r.failed {
			n++
		}
	}
	return n
}

// hungEnded returns when the last hung request gave up, and whether every
// hung request has.
func (c *leaseClient) hungEnded() (last time.Time, all bool) {
	all = true
	for _, r := range c.recorded() {
		if r.hung {
			if r.ended.IsZero() {
				all = false
			}
			if r.ended.After(last) {
				last = r.ended
			}
		}
	}
	return last, all
}

type coordinationClient struct {
	coordinationv1client.CoordinationV1Interface
	c *leaseClient
}

func (c coordinationClient) Leases(namespace string) coordinationv1client.LeaseInterface {
	return leaseRequests{c.CoordinationV1Interface.Leases(namespace), c.c}
}

type leaseRequests struct {
	coordinationv1client.LeaseInterface
	c *leaseClient
}

func (l leaseRequests) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	i, err := l.c.enter(ctx, "get")
	if err != nil {
		return nil, err
	}
	got, err := l.LeaseInterface.Get(ctx, name, opts)
	l.c.answered(i, err)
	return got, err
}

func (l leaseRequests) Create(ctx context.Context, o *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	i, err := l.c.enter(ctx, "create")
	if err != nil {
		return nil, err
	}
	got, err := l.LeaseInterface.Create(ctx, o, opts)
	l.c.answered(i, err)
	return got, err
}

func (l leaseRequests) Update(ctx context.Context, o *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	i, err := l.c.enter(ctx, "update")
	if err != nil {
		return nil, err
	}
	got, err := l.LeaseInterface.Update(ctx, o, opts)
	l.c.answered(i, err)
	return got, err
}

func (l leaseRequests) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	i, err := l.c.enter(ctx, "delete")
	if err != nil {
		return err
	}
	err = l.LeaseInterface.Delete(ctx, name, opts)
	l.c.answered(i, err)
	return err
}

// when returns f if cond holds, answer otherwise.
func when(cond bool, f fate) fate {
	if cond {
		return f
	}
	return answer
}

// firstOf returns a chooser that hangs the first request of verb it is
// asked about and answers every other.
func firstOf(verb string) chooser {
	var once sync.Once
	return func(v string, _ int) fate {
		f := answer
		if v == verb {
			once.Do(func() { f = hang })
		}
		return f
	}
}

// keepLeading waits until ok holds, failing if Run returns or a runnable
// is aborted first.
func keepLeading(t *testing.T, done <-chan error, a *abortable, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !ok() {
		select {
		case err := <-done:
			t.Fatalf("%s: leader.Run returned: %v", what, err)
		case <-time.After(10 * time.Millisecond):
		}
		require.Nil(t, a.cause.Load(), "%s: the runnable was aborted", what)
		require.True(t, time.Now().Before(deadline), "timed out: %s", what)
	}
}

// A leader whose renewal hangs until its context ends keeps leading: the
// request is abandoned in time for another attempt within the renew
// deadline.
func TestHungRenewalKeepsTheLease(t *testing.T) {
	client := newLeaseClient(func(verb string, n int) fate { return when(verb == "update" && n == 3, hang) })
	a := &abortable{runner: newRunner(nil)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runLeader(ctx, hangConfig(client, "me"), a)
	wait(t, a.started, "leading")
	keepLeading(t, done, a, func() bool {
		ended, all := client.hungEnded()
		return !ended.IsZero() && all && client.succeededAfter("update", ended) >= 3
	}, "renewals after the hung one")
	assert.Equal(t, "me", holder(t, client.Clientset))
	cancel()
	require.NoError(t, result(t, done), "no Lease lost")
	assert.Nil(t, a.cause.Load(), "the runnable is not aborted")
}

// Every Lease request Run sends, to acquire, renew or release the Lease,
// carries a deadline no later than lease.RequestTimeout after it was
// sent; one that hangs is abandoned in time for the candidate to acquire
// the Lease and the leader to keep it.
func TestLeaseRequestTimeouts(t *testing.T) {
	expired := heldBy("other", time.Now().Add(-time.Hour), 3)
	for _, tc := range []struct {
		name string
		// hang chooses the requests that hang while leading, or while
		// stopping if atStop.
		hang   chooser
		atStop bool
		// held: the Lease is still this replica's after Run returned.
		held bool
		objs []*coordinationv1.Lease
	}{
		{name: "nothing hangs"},
		{name: "acquire: the read", hang: func(verb string, n int) fate { return when(verb == "get" && n == 1, hang) }},
		{name: "acquire: the create", hang: func(verb string, n int) fate { return when(verb == "create" && n == 1, hang) }},
		{name: "acquire: the update taking an expired Lease over", objs: []*coordinationv1.Lease{expired},
			hang: func(verb string, n int) fate { return when(verb == "update" && n == 1, hang) }},
		{name: "renew: the update", hang: func(verb string, n int) fate { return when(verb == "update" && n == 2, hang) }},
		{name: "renew: the read after a failed update", hang: func(verb string, n int) fate {
			switch {
			case verb == "update" && n == 2:
				return fail
			case verb == "get" && n == 2:
				return hang
			}
			return answer
		}},
		{name: "release: the read", atStop: true, hang: firstOf("get")},
		{name: "release: the update", atStop: true, hang: firstOf("update")},
		{name: "release: every request", atStop: true, held: true, hang: func(string, int) fate { return hang }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := newLeaseClient(nil, tc.objs...)
			if !tc.atStop {
				client.setChooser(tc.hang)
			}
			cfg := hangConfig(client, "me")
			a := &abortable{runner: newRunner(nil)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := runLeader(ctx, cfg, a)
			wait(t, a.started, "leading")
			keepLeading(t, done, a, func() bool {
				ended, all := client.hungEnded()
				return all && client.succeededAfter("update", ended) >= 2
			}, "renewals after every hung request")
			if tc.atStop {
				client.setChooser(tc.hang)
			}
			cancel()
			require.NoError(t, result(t, done), "no Lease lost")
			assert.Nil(t, a.cause.Load(), "the runnable is not aborted")
			if tc.held {
				assert.Equal(t, "me", holder(t, client.Clientset), "every attempt to release hung: the Lease expires")
			} else {
				assert.Empty(t, holder(t, client.Clientset), "released")
			}

			timeout := requestTimeout(cfg)
			verbs := map[string]bool{}
			hung := 0
			for _, r := range client.recorded() {
				verbs[r.verb] = true
				if r.hung {
					hung++
				}
				if assert.True(t, r.hasDeadline, "%s has no deadline", r) {
					assert.False(t, r.deadline.After(r.sent.Add(timeout)),
						"%s may take %s, longer than the request timeout %s", r, r.deadline.Sub(r.sent).Round(time.Millisecond), timeout)
				}
			}
			if tc.hang == nil {
				assert.Equal(t, map[string]bool{"get": true, "create": true, "update": true}, verbs)
			} else {
				assert.NotZero(t, hung, "a request hung")
			}
		})
	}
}
