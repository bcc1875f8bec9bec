package eventstest_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func TestRecorderKeepsEvents(t *testing.T) {
	p := pod("p1")
	list := &corev1.PodList{}
	annotations := map[string]string{"k": "v"}

	tests := []struct {
		name   string
		record func(record.EventRecorder)
		want   eventstest.Event
	}{
		{
			name:   "Event",
			record: func(r record.EventRecorder) { r.Event(p, corev1.EventTypeNormal, "Synced", "done") },
			want: eventstest.Event{Object: pod("p1"), Namespace: "ns", Name: "p1",
				Type: corev1.EventTypeNormal, Reason: "Synced", Message: "done"},
		},
		{
			name:   "Eventf",
			record: func(r record.EventRecorder) { r.Eventf(p, corev1.EventTypeWarning, "Bad", "replicas %d", 3) },
			want: eventstest.Event{Object: pod("p1"), Namespace: "ns", Name: "p1",
				Type: corev1.EventTypeWarning, Reason: "Bad", Message: "replicas 3"},
		},
		{
			name: "AnnotatedEventf",
			record: func(r record.EventRecorder) {
				r.AnnotatedEventf(p, annotations, corev1.EventTypeNormal, "A", "%s", "x")
			},
			want: eventstest.Event{Object: pod("p1"), Namespace: "ns", Name: "p1",
				Type: corev1.EventTypeNormal, Reason: "A", Message: "x", Annotations: map[string]string{"k": "v"}},
		},
		{
			name:   "nil object",
			record: func(r record.EventRecorder) { r.Event(nil, corev1.EventTypeNormal, "R", "m") },
			want:   eventstest.Event{Type: corev1.EventTypeNormal, Reason: "R", Message: "m"},
		},
		{
			name:   "object without object metadata",
			record: func(r record.EventRecorder) { r.Event(list, corev1.EventTypeNormal, "R", "m") },
			want:   eventstest.Event{Object: &corev1.PodList{}, Type: corev1.EventTypeNormal, Reason: "R", Message: "m"},
		},
		{
			name:   "type is not validated",
			record: func(r record.EventRecorder) { r.Event(p, "warning", "R", "m") },
			want: eventstest.Event{Object: pod("p1"), Namespace: "ns", Name: "p1",
				Type: "warning", Reason: "R", Message: "m"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := eventstest.NewRecorder()
			tc.record(rec)
			assert.Equal(t, []eventstest.Event{tc.want}, rec.Events())
		})
	}
}

func TestRecorderCopiesInputs(t *testing.T) {
	rec := eventstest.NewRecorder()
	p := pod("p1")
	annotations := map[string]string{"k": "v"}
	rec.AnnotatedEventf(p, annotations, corev1.EventTypeNormal, "R", "m")

	p.Name = "changed"
	annotations["k"] = "changed"
	evs := rec.Events()
	evs[0].Reason = "changed"

	got := rec.Events()
	require.Len(t, got, 1)
	assert.Equal(t, "p1", got[0].Object.(*corev1.Pod).Name)
	assert.Equal(t, "v", got[0].Annotations["k"])
	assert.Equal(t, "R", got[0].Reason)
}

func TestRecorderFindAndReset(t *testing.T) {
	rec := eventstest.NewRecorder()
	rec.Event(pod("a"), corev1.EventTypeNormal, "Synced", "1")
	rec.Event(pod("b"), corev1.EventTypeWarning, "Failed", "2")
	rec.Event(pod("c"), corev1.EventTypeNormal, "Synced", "3")

	messages := func(evs []eventstest.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Message)
		}
		return out
	}
	tests := []struct {
		eventtype, reason string
		want              []string
	}{
		{"", "", []string{"1", "2", "3"}},
		{corev1.EventTypeNormal, "", []string{"1", "3"}},
		{"", "Failed", []string{"2"}},
		{corev1.EventTypeWarning, "Synced", nil},
	}
	for _, tc := range tests {
		t.Run(tc.eventtype+"/"+tc.reason, func(t *testing.T) {
			assert.Equal(t, tc.want, messages(rec.Find(tc.eventtype, tc.reason)))
		})
	}

	rec.Reset()
	assert.Empty(t, rec.Events())
	rec.Event(pod("d"), corev1.EventTypeNormal, "Synced", "4")
	assert.Equal(t, []string{"4"}, messages(rec.Events()))
}

func TestWithLoggerSharesEvents(t *testing.T) {
	rec := eventstest.NewRecorder()
	scoped := rec.WithLogger(klog.Background())
	scoped.Event(pod("a"), corev1.EventTypeNormal, "Scoped", "m")
	rec.Event(pod("b"), corev1.EventTypeNormal, "Direct", "m")
	assert.Len(t, rec.Events(), 2)
	assert.Len(t, scoped.(*eventstest.Recorder).Events(), 2)
}

func TestRecorderNeverBlocksAndIsSafeForConcurrentUse(t *testing.T) {
	rec := eventstest.NewRecorder()
	const goroutines, perGoroutine = 8, 500 // far more than FakeRecorder's usual buffer
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				rec.Eventf(pod(fmt.Sprint(g)), corev1.EventTypeNormal, "R", "%d", i)
				if i%100 == 0 {
					_ = rec.Find("", "R") // reads race with writes
				}
			}
		})
	}
	wg.Wait()
	assert.Len(t, rec.Events(), goroutines*perGoroutine)
}

func TestEventString(t *testing.T) {
	ev := eventstest.Event{Namespace: "ns", Name: "p", Type: "Warning", Reason: "Bad", Message: "boom"}
	assert.Equal(t, "Warning Bad ns/p: boom", ev.String())
}

// fakeTB records Fatalf calls instead of stopping the test.
type fakeTB struct {
	testing.TB
	failures []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

func TestRequireEvent(t *testing.T) {
	rec := eventstest.NewRecorder()
	rec.Event(pod("a"), corev1.EventTypeNormal, "Synced", "first")
	rec.Event(pod("b"), corev1.EventTypeNormal, "Synced", "second")

	tb := &fakeTB{}
	ev := eventstest.RequireEvent(tb, rec, corev1.EventTypeNormal, "Synced")
	assert.Empty(t, tb.failures)
	assert.Equal(t, "first", ev.Message)

	ev = eventstest.RequireEvent(tb, rec, corev1.EventTypeWarning, "Synced")
	assert.Equal(t, eventstest.Event{}, ev)
	require.Len(t, tb.failures, 1)
	assert.Contains(t, tb.failures[0], `no event with type "Warning" and reason "Synced"`)
	assert.Contains(t, tb.failures[0], "Normal Synced ns/a: first")
	assert.Contains(t, tb.failures[0], "Normal Synced ns/b: second")

	empty := &fakeTB{}
	eventstest.RequireEvent(empty, eventstest.NewRecorder(), "", "")
	require.Len(t, empty.failures, 1)
	assert.Contains(t, empty.failures[0], "recorded events: none")
}

func TestRequireNoEvent(t *testing.T) {
	rec := eventstest.NewRecorder()
	rec.Event(pod("a"), corev1.EventTypeWarning, "Failed", "boom")

	tb := &fakeTB{}
	eventstest.RequireNoEvent(tb, rec, corev1.EventTypeNormal, "")
	eventstest.RequireNoEvent(tb, rec, "", "Synced")
	assert.Empty(t, tb.failures)

	eventstest.RequireNoEvent(tb, rec, "", "")
	require.Len(t, tb.failures, 1)
	assert.Contains(t, tb.failures[0], "Warning Failed ns/a: boom")
}

func TestWaitForEvent(t *testing.T) {
	r := eventstest.NewRecorder()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	go func() {
		r.Event(pod, corev1.EventTypeNormal, "Other", "m")
		r.Eventf(pod, corev1.EventTypeWarning, "Failed", "attempt %d", 1)
	}()
	ev := eventstest.WaitForEvent(t, r, corev1.EventTypeWarning, "Failed")
	assert.Equal(t, "attempt 1", ev.Message)
}
