package events_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/events"
)

// While the API writer is behind, the events that do not fit in its buffer
// are lost without an error, and the logger still sees them all.
func TestSlowAPIServerLosesEventsSilently(t *testing.T) {
	const flood, batch = 1500, 250 // batches stay below the broadcaster's first queue
	logs := &countingSink{}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.New(logs)))
	defer cancel()
	client := fake.NewClientset()

	// The first create blocks until release is closed; creates are counted
	// by the name of the Pod they are about.
	blocked, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	var first atomic.Bool
	var written, markers atomic.Int32
	client.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if first.CompareAndSwap(false, true) {
			close(blocked)
			<-release
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*corev1.Event)
		if strings.HasPrefix(ev.InvolvedObject.Name, "marker-") {
			markers.Add(1)
		} else {
			written.Add(1)
		}
		// Answered here: the fake's object tracker is slow, and nothing
		// reads the events back.
		return true, ev, nil
	})
	rec, err := events.NewRecorder(ctx, client, "c")
	require.NoError(t, err)
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
	}
	logged := func() int { return int(logs.occurred.Load()) }

	rec.Event(pod("p-0"), corev1.EventTypeNormal, "Flood", "first")
	select {
	case <-blocked:
	case <-ctx.Done():
		t.Fatal("the first event never reached the API")
	}
	// Distinct Pods, so that the spam filter and aggregation keep every
	// event; each batch is logged before the next is recorded.
	for sent := 1; sent <= flood; {
		for range batch {
			rec.Event(pod(fmt.Sprintf("p-%d", sent)), corev1.EventTypeNormal, "Flood", "more")
			sent++
		}
		require.Eventually(t, func() bool { return logged() == sent }, waitFor, tick, "the logger keeps up")
	}

	releaseOnce.Do(func() { close(release) })
	// Events reach the API in order: once a marker is written, everything
	// the writer buffered before it has been written.
	n := 0
	require.Eventually(t, func() bool {
		if markers.Load() > 0 {
			return true
		}
		rec.Event(pod(fmt.Sprintf("marker-%d", n)), corev1.EventTypeNormal, "Marker", "m")
		n++
		return false
	}, waitFor, tick, "the API writer catches up")

	assert.Positive(t, written.Load())
	assert.Less(t, int(written.Load()), flood+1, "events that did not fit in the writer's buffer were lost")
	assert.GreaterOrEqual(t, logged(), flood+1, "every event was logged")
	assert.Empty(t, logs.errors(), "the loss is silent")
}

// countingSink is a logr.LogSink that counts "Event occurred" messages
// and keeps errors; cheaper than a test logger for thousands of events.
type countingSink struct {
	occurred atomic.Int32
	mu       sync.Mutex
	errs     []string
}

func (s *countingSink) Init(logr.RuntimeInfo)          {}
func (s *countingSink) Enabled(int) bool               { return true }
func (s *countingSink) WithValues(...any) logr.LogSink { return s }
func (s *countingSink) WithName(string) logr.LogSink   { return s }

func (s *countingSink) Info(_ int, msg string, _ ...any) {
	if msg == "Event occurred" {
		s.occurred.Add(1)
	}
}

func (s *countingSink) Error(err error, msg string, _ ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf("%s: %v", msg, err))
}

func (s *countingSink) errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// With WithEventsAPI a slow API server holds one goroutine per event
// instead of dropping events: every event is written once it answers.
func TestEventsAPISlowAPIServerKeepsEvents(t *testing.T) {
	const flood, batch = 1200, 200 // more than a broadcaster's buffer
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.New(&countingSink{})))
	defer cancel()
	client := &slowEventsClient{Clientset: fake.NewClientset(), release: make(chan struct{})}
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(client.release) }) })
	rec, err := events.NewRecorder(ctx, client, "c", events.WithEventsAPI())
	require.NoError(t, err)

	for sent := 0; sent < flood; {
		for range batch {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p-%d", sent), UID: types.UID(fmt.Sprint(sent))}}
			rec.Event(pod, corev1.EventTypeNormal, "Flood", "m")
			sent++
		}
		require.Eventually(t, func() bool { return int(client.waiting.Load()) == sent }, waitFor, tick,
			"every event waits for the API server in a write of its own")
	}
	releaseOnce.Do(func() { close(client.release) })
	require.Eventually(t, func() bool { return int(client.written.Load()) == flood }, waitFor, tick,
		"every event is written once the API server answers")
}

// slowEventsClient is a clientset whose events.k8s.io creates wait until
// release is closed. They wait outside the fake's lock, so that they wait
// side by side as they would for an API server.
type slowEventsClient struct {
	*fake.Clientset
	release          chan struct{}
	waiting, written atomic.Int32
}

func (c *slowEventsClient) EventsV1() eventsv1client.EventsV1Interface {
	return slowEventsV1{EventsV1Interface: c.Clientset.EventsV1(), c: c}
}

type slowEventsV1 struct {
	eventsv1client.EventsV1Interface
	c *slowEventsClient
}

func (s slowEventsV1) Events(namespace string) eventsv1client.EventInterface {
	return slowEvents{EventInterface: s.EventsV1Interface.Events(namespace), c: s.c}
}

type slowEvents struct {
	eventsv1client.EventInterface
	c *slowEventsClient
}

func (s slowEvents) Create(ctx context.Context, ev *eventsv1.Event, opts metav1.CreateOptions) (*eventsv1.Event, error) {
	s.c.waiting.Add(1)
	select {
	case <-s.c.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.c.written.Add(1)
	return ev, nil
}
