package eventstest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
)

// refuse stands for controller code that reports through a recorder.
func refuse(_ context.Context, recorder record.EventRecorder, obj *corev1.ConfigMap) {
	recorder.Eventf(obj, corev1.EventTypeWarning, "ErrResourceExists", "%s is not controlled by this controller", obj.Name)
}

// The package documentation's example.
func TestPackageDocExample(t *testing.T) {
	ctx := context.Background()
	foo := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	rec := eventstest.NewRecorder()
	refuse(ctx, rec, foo) // the code under test, given rec as its record.EventRecorder
	ev := eventstest.RequireEvent(t, rec, corev1.EventTypeWarning, "ErrResourceExists")
	assert.Contains(t, ev.Message, "is not controlled by")
}
