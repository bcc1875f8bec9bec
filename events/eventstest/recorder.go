// Package eventstest provides an event recorder for unit tests of code that
// records Kubernetes events.
//
// Recorder implements record.EventRecorderLogger. It keeps every event in
// memory, in order, so tests can assert which events their code recorded.
// Unlike record.FakeRecorder it never blocks and never drops events, however
// many are recorded, and it is safe for concurrent use:
//
//	rec := eventstest.NewRecorder()
//	refuse(ctx, rec, foo) // the code under test, given rec as its record.EventRecorder
//	ev := eventstest.RequireEvent(t, rec, corev1.EventTypeWarning, "ErrResourceExists")
//	assert.Contains(t, ev.Message, "is not controlled by")
package eventstest

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Event is one event kept by a Recorder.
type Event struct {
	// Object is a deep copy of the involved object taken when the event was
	// recorded, or nil when the recorder was given nil.
	Object runtime.Object
	// Namespace and Name identify the involved object; both are empty when it
	// has no object metadata.
	Namespace, Name string
	// Type is the event type as given, normally corev1.EventTypeNormal or
	// corev1.EventTypeWarning. Recorder does not validate it.
	Type string
	// Reason is the event's reason as given.
	Reason string
	// Message is the event's message, formatted for Eventf and
	// AnnotatedEventf.
	Message string
	// Annotations are those given to AnnotatedEventf, nil otherwise.
	Annotations map[string]string
}

// String returns the event as "Type Reason namespace/name: Message".
func (e Event) String() string {
	return fmt.Sprintf("%s %s %s: %s", e.Type, e.Reason, klog.KRef(e.Namespace, e.Name), e.Message)
}

// Recorder is a record.EventRecorderLogger that keeps the events it is given.
// Its zero value is not usable; call NewRecorder. All methods are safe for
// concurrent use.
type Recorder struct {
	s *store
}

type store struct {
	mu     sync.Mutex
	events []Event
}

var _ record.EventRecorderLogger = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{s: &store{}}
}

// Event keeps an event with the given message.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.add(object, nil, eventtype, reason, message)
}

// Eventf keeps an event whose message is fmt.Sprintf(messageFmt, args...).
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.add(object, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf is Eventf with annotations; the annotations map is copied.
func (r *Recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.add(object, maps.Clone(annotations), eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// WithLogger returns a recorder that shares r's events; the logger is not
// used.
func (r *Recorder) WithLogger(klog.Logger) record.EventRecorderLogger {
	return &Recorder{s: r.s}
}

func (r *Recorder) add(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	ev := Event{Type: eventtype, Reason: reason, Message: message, Annotations: annotations}
	if object != nil {
		ev.Object = object.DeepCopyObject()
		if m, err := meta.Accessor(object); err == nil {
			ev.Namespace, ev.Name = m.GetNamespace(), m.GetName()
		}
	}
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.events = append(r.s.events, ev)
}

// Events returns the events kept so far, oldest first. The slice is a copy.
func (r *Recorder) Events() []Event {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	out := make([]Event, len(r.s.events))
	copy(out, r.s.events)
	return out
}

// Reset forgets every event kept so far.
func (r *Recorder) Reset() {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.events = nil
}

// Find returns the events kept so far whose type is eventtype and whose
// reason is reason, oldest first. An empty eventtype or reason matches any.
func (r *Recorder) Find(eventtype, reason string) []Event {
	var out []Event
	for _, ev := range r.Events() {
		if (eventtype == "" || ev.Type == eventtype) && (reason == "" || ev.Reason == reason) {
			out = append(out, ev)
		}
	}
	return out
}

// RequireEvent returns the oldest event of r that matches eventtype and
// reason as Find does. When there is none it fails the test with t.Fatalf,
// listing the events r has kept.
func RequireEvent(t testing.TB, r *Recorder, eventtype, reason string) Event {
	t.Helper()
	found := r.Find(eventtype, reason)
	if len(found) == 0 {
		t.Fatalf("no event with type %q and reason %q was recorded; recorded events:%s",
			eventtype, reason, list(r.Events()))
		return Event{}
	}
	return found[0]
}

// WaitTimeout bounds how long WaitForEvent waits.
const WaitTimeout = 30 * time.Second

// WaitForEvent waits until r has kept an event that matches eventtype and
// reason as Find does, and returns the oldest such event; it fails the test
// with t.Fatalf, listing the events r has kept, if none comes within
// WaitTimeout. It is for events recorded by a running controller.
func WaitForEvent(t testing.TB, r *Recorder, eventtype, reason string) Event {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	tick := time.NewTicker(time.Millisecond) // polling: the recorder has no notification
	defer tick.Stop()
	for {
		if found := r.Find(eventtype, reason); len(found) > 0 {
			return found[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event with type %q and reason %q was recorded within %s; recorded events:%s",
				eventtype, reason, WaitTimeout, list(r.Events()))
			return Event{}
		}
		<-tick.C
	}
}

// RequireNoEvent fails the test with t.Fatalf when r has kept an event that
// matches eventtype and reason as Find does. RequireNoEvent(t, r, "", "")
// requires that no event at all was recorded.
func RequireNoEvent(t testing.TB, r *Recorder, eventtype, reason string) {
	t.Helper()
	if found := r.Find(eventtype, reason); len(found) > 0 {
		t.Fatalf("unexpected events with type %q and reason %q:%s", eventtype, reason, list(found))
	}
}

func list(evs []Event) string {
	if len(evs) == 0 {
		return " none"
	}
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString("\n\t")
		b.WriteString(ev.String())
	}
	return b.String()
}
