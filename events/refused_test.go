package events_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/events"
)

// An event the API server refuses for a reason that passes (a restarting
// API server denies requests until its authorization caches are filled;
// an overloaded one answers 429 or 503) is retried, as client-go's
// recorder retries an unreachable server's, and reaches the API server
// once it answers; one refused for good (invalid) is dropped at once.
func TestEventRefusedForNowIsRetried(t *testing.T) {
	eventsResource := schema.GroupResource{Resource: "events"}
	for _, api := range []struct {
		name     string
		resource string // the resource the reactor refuses, "events" of this group
		group    string
		opts     []events.Option
	}{
		{"core/v1", "events", "", nil},
		{"events.k8s.io/v1", "events", "events.k8s.io", []events.Option{events.WithEventsAPI()}},
	} {
		for _, tc := range []struct {
			name      string
			refusal   error
			delivered bool
		}{
			{"forbidden while the API server starts", apierrors.NewForbidden(eventsResource, "", nil), true},
			{"invalid", apierrors.NewBadRequest("malformed"), false},
		} {
			t.Run(api.name+"/"+tc.name, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				ctx, cancel, _ := testContext(t)
				defer cancel()
				client := fake.NewClientset()
				var refused atomic.Int32
				client.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetResource().Group != api.group {
						return false, nil, nil
					}
					if refused.Add(1) == 1 {
						return true, nil, tc.refusal
					}
					return false, nil, nil
				})
				rec, err := events.NewRecorder(ctx, client, "c", append(api.opts, events.WithAddToScheme(addWidget))...)
				require.NoError(t, err)
				reasons := func() []string { return storedReasons(t, client, api.group) }
				rec.Event(newWidget("w1"), corev1.EventTypeWarning, "Refused", "first refused")
				if tc.delivered {
					// client-go's recorders wait about 10 s before they try again.
					require.Eventually(t, func() bool { return len(reasons()) == 1 }, 30*time.Second, 10*time.Millisecond,
						"the event refused for now never reached the API server")
					assert.Equal(t, []string{"Refused"}, reasons())
				} else {
					require.Eventually(t, func() bool { return refused.Load() == 1 }, waitFor, tick)
					rec.Event(newWidget("w1"), corev1.EventTypeNormal, "Next", "delivered")
					require.Eventually(t, func() bool { return len(reasons()) == 1 }, waitFor, tick)
					assert.Equal(t, []string{"Next"}, reasons(), "an invalid event was retried")
					assert.EqualValues(t, 2, refused.Load(), "creates: the invalid one, and the next")
				}
				stopAndVerifyNoLeaks(t, cancel, ignore)
			})
		}
	}
}

// storedReasons returns the reasons of the events the fake API server
// holds in group: "" (core/v1) or "events.k8s.io".
func storedReasons(t *testing.T, client *fake.Clientset, group string) []string {
	var reasons []string
	if group == "" {
		for _, e := range stored(t, client) {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}
	list, err := client.EventsV1().Events("").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range list.Items {
		reasons = append(reasons, e.Reason)
	}
	return reasons
}

// stored returns the events the fake API server holds.
func stored(t *testing.T, client *fake.Clientset) []corev1.Event {
	list, err := client.CoreV1().Events("").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	return list.Items
}

// Which refusals may pass: those are retried, the others dropped at once
// (NotFound and AlreadyExists the recorder acts on itself).
func TestRefusalsThatMayPass(t *testing.T) {
	gr := schema.GroupResource{Resource: "events"}
	terminating := apierrors.NewForbidden(gr, "e", nil)
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tc := range []struct {
		err   error
		retry bool
	}{
		{apierrors.NewForbidden(gr, "e", nil), true},
		{apierrors.NewUnauthorized("starting"), true},
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewServiceUnavailable("starting"), true},
		{apierrors.NewServerTimeout(gr, "create", 1), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewInternalError(errors.New("boom")), true},
		{terminating, false},
		{apierrors.NewNotFound(gr, "e"), false},
		{apierrors.NewAlreadyExists(gr, "e"), false},
		{apierrors.NewBadRequest("malformed"), false},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, "e", nil), false},
	} {
		got := events.MayPass(tc.err)
		_, isStatus := got.(*apierrors.StatusError)
		assert.Equal(t, tc.retry, !isStatus, "%v", tc.err)
		assert.ErrorIs(t, got, tc.err)
	}
	assert.NoError(t, events.MayPass(nil))
}
