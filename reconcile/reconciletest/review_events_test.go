package reconciletest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/events"
)

// reviewWidget is a custom resource's Go type as an apigen operator's
// informers hand it to a controller: its TypeMeta empty.
type reviewWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (w *reviewWidget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// recordsOne records an event on a Widget with rec and says whether it
// reached the API server.
func recordsOne(t *testing.T, client *fake.Clientset, rec interface {
	Event(runtime.Object, string, string, string)
}) bool {
	t.Helper()
	rec.Event(&reviewWidget{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: "ns", UID: "u1"}}, corev1.EventTypeNormal, "Ready", "ready")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		l, err := client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		if len(l.Items) > 0 {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// apigen init's main.go (cmd/apigen/scaffold/main.go.tmpl) and
// docs/new-api.md tell a user who wants events (a condition.Writer's
// transitions on Widgets) to "make a recorder in runOperator with
// events.NewRecorder ... and pass it to the controllers". A recorder made
// so, events.NewRecorder(ctx, kube, component), knows client-go's types
// only: an event on a Widget (as its informer gives it, TypeMeta empty)
// is logged as an error and never recorded. What should happen: the
// recipe the scaffold gives records the Widget's event, i.e. it names
// events.WithAddToScheme(examplev1.AddToScheme) (as the control below,
// which does record it).
func TestReviewMainGoRecorderRecipeRecordsWidgetEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gvk := schema.GroupVersion{Group: "example.com", Version: "v1"}.WithKind("Widget")

	// Control: with the API's scheme the Widget's event is recorded.
	withScheme := fake.NewClientset()
	rec, err := events.NewRecorder(ctx, withScheme, "widget-operator", events.WithAddToScheme(func(s *runtime.Scheme) error {
		s.AddKnownTypeWithName(gvk, &reviewWidget{})
		return nil
	}))
	require.NoError(t, err)
	require.True(t, recordsOne(t, withScheme, rec), "control: a recorder with the Widget's scheme records its event")

	// The recipe of main.go's comment.
	client := fake.NewClientset()
	rec, err = events.NewRecorder(ctx, client, "widget-operator")
	require.NoError(t, err)
	require.True(t, recordsOne(t, client, rec), "a recorder made as init's main.go says (events.NewRecorder(ctx, kube, component)) records no event on a Widget: the comment does not name events.WithAddToScheme")
}
