package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/events"
)

const (
	waitFor = 10 * time.Second
	tick    = 5 * time.Millisecond
)

// widget is a custom resource type that only the tests' schemes know.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// gadget is a type that no scheme knows.
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

var widgetGV = schema.GroupVersion{Group: "example.ctrlkit.io", Version: "v1"}

func addWidget(s *runtime.Scheme) error {
	s.AddKnownTypeWithName(widgetGV.WithKind("Widget"), &widget{})
	metav1.AddToGroupVersion(s, widgetGV)
	return nil
}

func widgetScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, addWidget(s))
	return s
}

func newWidget(name string) *widget {
	return &widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name, UID: types.UID("uid-" + name)}}
}

// testContext returns a cancellable context whose logger captures all output
// up to verbosity 10, and the buffer holding that output.
func testContext(t *testing.T) (context.Context, context.CancelFunc, ktesting.Buffer) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(10)))
	underlier, ok := logger.GetSink().(ktesting.Underlier)
	require.True(t, ok)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	return ctx, cancel, underlier.GetBuffer()
}

// createdEvents returns the events the fake clientset was asked to create.
func createdEvents(client *fake.Clientset) []*corev1.Event {
	var out []*corev1.Event
	for _, a := range client.Actions() {
		create, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetResource().Resource != "events" {
			continue
		}
		if ev, ok := create.GetObject().(*corev1.Event); ok {
			out = append(out, ev)
		}
	}
	return out
}

// waitForEvent waits until an event with reason has been created on client.
func waitForEvent(t *testing.T, client *fake.Clientset, reason string) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	require.Eventually(t, func() bool {
		for _, ev := range createdEvents(client) {
			if ev.Reason == reason {
				found = ev
				return true
			}
		}
		return false
	}, waitFor, tick, "no event with reason %q was created", reason)
	return found
}

func reasons(evs []*corev1.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.Reason)
	}
	return out
}

// logEntries returns the captured log entries whose message is msg.
func logEntries(buf ktesting.Buffer, msg string) []ktesting.LogEntry {
	var out []ktesting.LogEntry
	for _, e := range buf.Data() {
		if e.Message == msg {
			out = append(out, e)
		}
	}
	return out
}

func kv(list []any, key string) any {
	for i := 0; i+1 < len(list); i += 2 {
		if list[i] == key {
			return list[i+1]
		}
	}
	return nil
}

// stopAndVerifyNoLeaks cancels ctx and waits until every goroutine started
// since ignore was taken has exited.
func stopAndVerifyNoLeaks(t *testing.T, cancel context.CancelFunc, ignore goleak.Option) {
	t.Helper()
	cancel()
	var leakErr error
	ok := assert.Eventually(t, func() bool {
		leakErr = goleak.Find(ignore)
		return leakErr == nil
	}, waitFor, tick)
	if !ok {
		t.Errorf("goroutines left after cancel: %v", leakErr)
	}
}

func TestNewRecorderWritesEventsForRegisteredTypes(t *testing.T) {
	tests := []struct {
		name    string
		opts    []events.Option
		object  runtime.Object
		wantRef corev1.ObjectReference
	}{
		{
			name:   "custom type through WithAddToScheme",
			opts:   []events.Option{events.WithAddToScheme(addWidget)},
			object: newWidget("w1"),
			wantRef: corev1.ObjectReference{
				Kind: "Widget", APIVersion: "example.ctrlkit.io/v1", Namespace: "ns1", Name: "w1", UID: "uid-w1",
			},
		},
		{
			name:   "custom type through WithScheme",
			opts:   []events.Option{events.WithScheme(widgetScheme(t))},
			object: newWidget("w2"),
			wantRef: corev1.ObjectReference{
				Kind: "Widget", APIVersion: "example.ctrlkit.io/v1", Namespace: "ns1", Name: "w2", UID: "uid-w2",
			},
		},
		{
			name:   "client-go type without options",
			object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "p1", UID: "uid-p1"}},
			wantRef: corev1.ObjectReference{
				Kind: "Pod", APIVersion: "v1", Namespace: "ns2", Name: "p1", UID: "uid-p1",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			ctx, cancel, logs := testContext(t)
			defer cancel()
			client := fake.NewClientset()

			opts := append([]events.Option{events.WithHost("node-a")}, tc.opts...)
			rec, err := events.NewRecorder(ctx, client, "widget-controller", opts...)
			require.NoError(t, err)

			rec.Eventf(tc.object, corev1.EventTypeWarning, "Broken", "replicas %d is invalid", -1)

			ev := waitForEvent(t, client, "Broken")
			assert.Equal(t, corev1.EventTypeWarning, ev.Type)
			assert.Equal(t, "replicas -1 is invalid", ev.Message)
			assert.Equal(t, tc.wantRef, ev.InvolvedObject)
			assert.Equal(t, tc.wantRef.Namespace, ev.Namespace)
			assert.Equal(t, corev1.EventSource{Component: "widget-controller", Host: "node-a"}, ev.Source)
			assert.Equal(t, "widget-controller", ev.ReportingController)
			assert.Equal(t, "node-a", ev.ReportingInstance)

			// The event is also logged through the contextual logger.
			require.Eventually(t, func() bool {
				return len(logEntries(logs, "Event occurred")) > 0
			}, waitFor, tick)
			entry := logEntries(logs, "Event occurred")[0]
			assert.Equal(t, int(events.DefaultLogVerbosity), entry.Verbosity)
			assert.Equal(t, "Broken", kv(entry.ParameterKVList, "reason"))
			assert.Equal(t, tc.wantRef.Kind, kv(entry.ParameterKVList, "kind"))
			assert.Equal(t, klog.KRef(tc.wantRef.Namespace, tc.wantRef.Name), kv(entry.ParameterKVList, "object"))

			stopAndVerifyNoLeaks(t, cancel, ignore)
		})
	}
}

func TestNewRecorderDoesNotTouchOtherSchemes(t *testing.T) {
	ctx, cancel, _ := testContext(t)
	defer cancel()
	callerScheme := widgetScheme(t)
	widgetGVK := widgetGV.WithKind("Widget")
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")

	_, err := events.NewRecorder(ctx, fake.NewClientset(), "c",
		events.WithScheme(callerScheme), events.WithAddToScheme(addWidget))
	require.NoError(t, err)

	assert.False(t, clientgoscheme.Scheme.Recognizes(widgetGVK), "client-go's global scheme was modified")
	assert.False(t, callerScheme.Recognizes(podGVK), "the caller's scheme was modified")
}

func TestNewRecorderUnknownTypeLogsError(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx, cancel, logs := testContext(t)
	defer cancel()
	client := fake.NewClientset()
	rec, err := events.NewRecorder(ctx, client, "c", events.WithAddToScheme(addWidget))
	require.NoError(t, err)

	unknown := &gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "g1"}}
	require.NotPanics(t, func() {
		rec.Event(unknown, corev1.EventTypeNormal, "Unknown", "not delivered")
	})
	// Events are delivered in order: once this one is created, the first
	// one would have been too.
	rec.Event(newWidget("w1"), corev1.EventTypeNormal, "Known", "delivered")
	waitForEvent(t, client, "Known")

	assert.Equal(t, []string{"Known"}, reasons(createdEvents(client)))
	errs := logEntries(logs, "Could not construct reference, will not report event")
	require.Len(t, errs, 1, "log:\n%s", logs.String())
	assert.Equal(t, ktesting.LogError, errs[0].Type)
	require.Error(t, errs[0].Err)
	assert.Contains(t, errs[0].Err.Error(), "gadget")
	assert.Equal(t, "Unknown", kv(errs[0].ParameterKVList, "reason"))

	stopAndVerifyNoLeaks(t, cancel, ignore)
}

func TestRecorderWithLoggerLogsToGivenLogger(t *testing.T) {
	ctx, cancel, ctxLogs := testContext(t)
	defer cancel()
	client := fake.NewClientset()
	rec, err := events.NewRecorder(ctx, client, "c")
	require.NoError(t, err)

	other := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	otherLogs := other.GetSink().(ktesting.Underlier).GetBuffer()
	scoped := rec.WithLogger(other)

	scoped.Event(&gadget{}, corev1.EventTypeNormal, "Unknown", "m")
	scoped.AnnotatedEventf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}},
		map[string]string{"a": "b"}, corev1.EventTypeNormal, "Annotated", "%s", "m")

	ev := waitForEvent(t, client, "Annotated")
	assert.Equal(t, map[string]string{"a": "b"}, ev.Annotations)
	assert.Len(t, logEntries(otherLogs, "Could not construct reference, will not report event"), 1)
	assert.Empty(t, logEntries(ctxLogs, "Could not construct reference, will not report event"))
}

func TestNewRecorderShutsDownWithContext(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx, cancel, logs := testContext(t)
	defer cancel()
	client := fake.NewClientset()
	rec, err := events.NewRecorder(ctx, client, "c")
	require.NoError(t, err)
	scoped := rec.WithLogger(klog.FromContext(ctx))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}

	rec.Event(pod, corev1.EventTypeNormal, "Before", "m")
	waitForEvent(t, client, "Before")

	stopAndVerifyNoLeaks(t, cancel, ignore)

	require.NotPanics(t, func() {
		rec.Event(pod, corev1.EventTypeNormal, "After", "m")
		rec.Eventf(pod, corev1.EventTypeNormal, "After", "%s", "m")
		scoped.AnnotatedEventf(pod, nil, corev1.EventTypeNormal, "After", "m")
		rec.Event(nil, corev1.EventTypeNormal, "After", "m")
	})
	assert.Equal(t, []string{"Before"}, reasons(createdEvents(client)))
	dropped := logEntries(logs, "Event dropped: the recorder's context has ended")
	require.Len(t, dropped, 4)
	assert.Equal(t, 4, dropped[0].Verbosity)
	assert.Equal(t, klog.KObj(pod), kv(dropped[0].ParameterKVList, "object"))
	assert.Equal(t, "After", kv(dropped[0].ParameterKVList, "reason"))
	assert.Nil(t, kv(dropped[3].ParameterKVList, "object"))
	assert.Empty(t, logEntries(logs, "Unable to record event (will not retry!)"))
	goleak.VerifyNone(t, ignore)
}

func TestNewRecorderOptions(t *testing.T) {
	t.Run("log verbosity", func(t *testing.T) {
		ctx, cancel, logs := testContext(t)
		defer cancel()
		client := fake.NewClientset()
		rec, err := events.NewRecorder(ctx, client, "c", events.WithLogVerbosity(3))
		require.NoError(t, err)

		rec.Event(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, corev1.EventTypeNormal, "R", "m")
		require.Eventually(t, func() bool {
			return len(logEntries(logs, "Event occurred")) > 0
		}, waitFor, tick)
		assert.Equal(t, 3, logEntries(logs, "Event occurred")[0].Verbosity)
	})

	t.Run("nil options are ignored", func(t *testing.T) {
		ctx, cancel, _ := testContext(t)
		defer cancel()
		client := fake.NewClientset()
		var rec record.EventRecorderLogger
		require.NotPanics(t, func() {
			var err error
			rec, err = events.NewRecorder(ctx, client, "c", nil, events.WithLogVerbosity(3), nil)
			require.NoError(t, err)
		})
		rec.Event(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, corev1.EventTypeNormal, "Nil", "m")
		waitForEvent(t, client, "Nil")
	})

	t.Run("correlator options", func(t *testing.T) {
		ctx, cancel, _ := testContext(t)
		defer cancel()
		client := fake.NewClientset()
		// A burst of one with a negligible refill rate: the spam filter lets
		// only the first event per object through.
		rec, err := events.NewRecorder(ctx, client, "c",
			events.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 1, QPS: 1e-9}))
		require.NoError(t, err)
		p1 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"}}
		p2 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p2"}}

		rec.Event(p1, corev1.EventTypeNormal, "First", "m")
		rec.Event(p1, corev1.EventTypeNormal, "Second", "m")
		rec.Event(p2, corev1.EventTypeNormal, "Third", "m")
		waitForEvent(t, client, "Third")
		assert.Equal(t, []string{"First", "Third"}, reasons(createdEvents(client)))
	})
}

func TestNewRecorderErrors(t *testing.T) {
	errAdd := errors.New("add failed")
	conflicting := runtime.NewScheme()
	// Map the core Pod kind to another Go type.
	conflicting.AddKnownTypeWithName(corev1.SchemeGroupVersion.WithKind("Pod"), &widget{})

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name      string
		ctx       context.Context
		nilClient bool
		component string
		opts      []events.Option
		want      string
		wantErr   error
	}{
		{name: "nil client", nilClient: true, want: "client is nil"},
		{name: "empty component", component: "-", want: "component is empty"},
		{name: "ended context", ctx: cancelled, want: "context already ended", wantErr: context.Canceled},
		{
			name:    "AddToScheme fails",
			opts:    []events.Option{events.WithAddToScheme(addWidget, func(*runtime.Scheme) error { return errAdd })},
			want:    "WithAddToScheme",
			wantErr: errAdd,
		},
		{name: "nil AddToScheme", opts: []events.Option{events.WithAddToScheme(nil)}, want: "function 0 is nil"},
		{name: "nil scheme", opts: []events.Option{events.WithScheme(nil)}, want: "scheme is nil"},
		{name: "conflicting scheme", opts: []events.Option{events.WithScheme(conflicting)}, want: "/v1, Kind=Pod is registered as"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			component := "c"
			if tc.component == "-" {
				component = ""
			}
			var rec record.EventRecorderLogger
			var err error
			if tc.nilClient {
				rec, err = events.NewRecorder(ctx, nil, component, tc.opts...)
			} else {
				rec, err = events.NewRecorder(ctx, fake.NewClientset(), component, tc.opts...)
			}
			require.Error(t, err)
			assert.Nil(t, rec)
			assert.True(t, strings.HasPrefix(err.Error(), "events: "), err.Error())
			assert.Contains(t, err.Error(), tc.want)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
			}
		})
	}
}

func TestRecorderIsSafeForConcurrentUse(t *testing.T) {
	ctx, cancel, _ := testContext(t)
	defer cancel()
	client := fake.NewClientset()
	rec, err := events.NewRecorder(ctx, client, "c")
	require.NoError(t, err)

	const n = 8
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}}
			rec.Eventf(pod, corev1.EventTypeNormal, "Concurrent", "pod %d", i)
		}()
	}
	for range n {
		<-done
	}
	require.Eventually(t, func() bool {
		return len(createdEvents(client)) == n
	}, waitFor, tick)
}

// With WithEventsAPI, events go to events.k8s.io/v1, with the reason as
// their action, and repeated events become a series.
func TestNewRecorderEventsAPI(t *testing.T) {
	ctx, cancel, logs := testContext(t)
	client := fake.NewClientset()
	rec, err := events.NewRecorder(ctx, client, "foo-controller", events.WithEventsAPI(), events.WithLogVerbosity(2))
	require.NoError(t, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}}
	rec.Event(pod, corev1.EventTypeNormal, "Synced", "all good")
	rec.Eventf(pod, corev1.EventTypeWarning, "Failed", "attempt %d", 1)
	rec.AnnotatedEventf(pod, map[string]string{"k": "v"}, corev1.EventTypeNormal, "Annotated", "with %s", "annotations")
	rec.WithLogger(klog.FromContext(ctx)).Event(pod, corev1.EventTypeNormal, "Logged", "m")

	var created []*eventsv1.Event
	require.Eventually(t, func() bool {
		created = nil
		for _, a := range client.Actions() {
			if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Group == "events.k8s.io" {
				created = append(created, c.GetObject().(*eventsv1.Event))
			}
		}
		return len(created) == 4
	}, waitFor, tick)
	byReason := map[string]*eventsv1.Event{}
	for _, ev := range created {
		byReason[ev.Reason] = ev
	}
	require.Contains(t, byReason, "Failed")
	failed := byReason["Failed"]
	assert.Equal(t, "Failed", failed.Action)
	assert.Equal(t, "attempt 1", failed.Note)
	assert.Equal(t, corev1.EventTypeWarning, failed.Type)
	assert.Equal(t, "foo-controller", failed.ReportingController)
	assert.Equal(t, corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", UID: "u"}, failed.Regarding)
	assert.Equal(t, "v", byReason["Annotated"].Annotations["k"])
	assert.Empty(t, createdEvents(client), "nothing went to core/v1")
	assert.NotEmpty(t, logEntries(logs, "Event occurred"), "events are logged")

	cancel()
	rec.Event(pod, corev1.EventTypeNormal, "Late", "dropped after the context ended")
}

func TestNewRecorderEventsAPIConflicts(t *testing.T) {
	for _, opt := range []events.Option{events.WithHost("h"), events.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 1})} {
		_, err := events.NewRecorder(context.Background(), fake.NewClientset(), "c", events.WithEventsAPI(), opt)
		require.ErrorContains(t, err, "WithEventsAPI cannot be combined with")
	}
}
