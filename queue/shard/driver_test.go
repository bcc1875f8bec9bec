package shard

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// recordedEffects records a driver's requests and carries out none.
type recordedEffects struct{ sent *[]request }

func (e recordedEffects) send(r request) { *e.sent = append(*e.sent, r) }
func (recordedEffects) startInformer()   {}

// newTestDriver returns a driver whose requests go to sent.
func newTestDriver(t *testing.T, sent *[]request) *driver {
	m, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "a"})
	require.NoError(t, err)
	if sent == nil {
		sent = new([]request)
	}
	return newDriver(m, recordedEffects{sent}, logr.Discard())
}

// TestReleasesReportedInOrder: a generation counts as released only once
// the claims revoked by it and by every generation before it are.
func TestReleasesReportedInOrder(t *testing.T) {
	d := newTestDriver(t, nil)
	first, second := make(chan struct{}), make(chan struct{})
	d.queueRelease(1, []<-chan struct{}{first})
	d.queueRelease(2, []<-chan struct{}{second})
	released := func() (gen uint64) {
		d.m.withCore(func(c *core) { gen = c.releasedGen })
		return gen
	}

	close(second)
	d.pollReleases()
	assert.Zero(t, released(), "nothing is released while a claim revoked first is held")
	close(first)
	d.pollReleases()
	assert.Equal(t, uint64(2), released())
	assert.Empty(t, d.releases)
}

// TestRenewalThatTimedOutMayStillLand: a renewal that failed without a
// conflict may still land, so the list it publishes keeps binding the
// replica's claims; one refused with a conflict never lands.
func TestRenewalThatTimedOutMayStillLand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		mayLand bool
	}{
		{"timeout", apierrors.NewTimeoutError("slow", 1), true},
		{"server error", apierrors.NewInternalError(assert.AnError), true},
		{"conflict", apierrors.NewConflict(leaseResource, "a", assert.AnError), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDriver(t, nil)
			list := []string{"g-a", "g-b"}
			var seq uint64
			d.m.withCore(func(c *core) {
				c.own = &coordinationv1.Lease{}
				c.desired = published{gen: 1, members: list}
				c.nextWrite(time.Second, time.Now())
				seq = c.seq
			})
			d.writing = true
			d.answered(request{Kind: reqRenew, Seq: seq}, &coordinationv1.Lease{}, tc.err)
			var inFlight [][]string
			d.m.withCore(func(c *core) { inFlight = c.inFlight() })
			if tc.mayLand {
				assert.Contains(t, inFlight, list)
			} else {
				assert.NotContains(t, inFlight, list)
			}
		})
	}
}

// TestTakeoverLeavesOnlyOnceFormerProcessStopped: a process that took its
// Lease over and stops publishes that its replica left only once the
// former process has stopped, and not at all while it cannot know when,
// or when that is past RenewDeadline of the stop (the stop's deadline).
func TestTakeoverLeavesOnlyOnceFormerProcessStopped(t *testing.T) {
	const now = time.Minute
	for _, tc := range []struct {
		name string
		hold func(renewDeadline time.Duration) time.Duration // 0: not known yet
		wait bool
	}{
		{"former process's end unknown", func(time.Duration) time.Duration { return 0 }, false},
		{"former process stops within the stop's deadline", func(rd time.Duration) time.Duration { return now + rd/2 }, true},
		{"former process may run past the stop's deadline", func(rd time.Duration) time.Duration { return now + 2*rd }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent []request
			d := newTestDriver(t, &sent)
			d.m.now = func() time.Duration { return now }
			hold := tc.hold(d.m.cfg.RenewDeadline)
			d.m.withCore(func(c *core) { c.own, c.takeover, c.hold = &coordinationv1.Lease{}, true, hold })
			d.phase = phaseRunning
			d.stop()
			d.turn()
			for _, r := range sent {
				assert.NotEqual(t, reqLeave, r.Kind, "published that it left")
			}
			if tc.wait {
				assert.Equal(t, hold, d.wake(), "waits until the former process has stopped")
			} else {
				done, err := d.done()
				assert.True(t, done, "stops, leaving its Lease to expire")
				assert.NoError(t, err)
			}
		})
	}
}

// TestStaleLeaseDeletedOnlyAsSeen: a departed member's Lease is deleted
// only in the version that was judged gone, so that a member that renewed
// it since keeps it.
func TestStaleLeaseDeletedOnlyAsSeen(t *testing.T) {
	client := fake.NewClientset()
	var got metav1.DeleteOptions
	client.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		got = a.(k8stesting.DeleteActionImpl).DeleteOptions
		return true, nil, nil
	})
	m, err := New(Config{Client: client, Namespace: "ops", Group: "g", Identity: "a"})
	require.NoError(t, err)
	_, err = request{Kind: reqDeleteStale, Stale: staleLease{name: "g-b", uid: "uid-b", resourceVersion: "7"}}.do(context.Background(), m)
	require.NoError(t, err)
	require.NotNil(t, got.Preconditions)
	assert.Equal(t, "uid-b", string(*got.Preconditions.UID))
	assert.Equal(t, "7", *got.Preconditions.ResourceVersion)
}

// TestStopPublishesLeft: a replica that stops normally, once its claims
// are released, writes that it left before it deletes its Lease, so that
// the others take its keys at once.
func TestStopPublishesLeft(t *testing.T) {
	var sent []request
	d := newTestDriver(t, &sent)
	d.m.withCore(func(c *core) {
		c.own = &coordinationv1.Lease{}
		c.desired = published{gen: 3, members: []string{d.m.Name(), "g-b"}}
	})
	d.phase = phaseRunning
	d.stop()
	d.turn()
	require.NotEmpty(t, sent)
	last := sent[len(sent)-1]
	require.Equal(t, reqLeave, last.Kind)
	pub, ok := parsePublished(last.Lease.Annotations[AnnotationView])
	require.True(t, ok)
	assert.True(t, pub.left, "publishes that it left, not %v", pub)
	assert.Greater(t, pub.gen, uint64(3), "in a generation after the last list")
}
