package eventstest_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
)

// syncFoo stands for controller code that reports through a record.EventRecorder.
func syncFoo(recorder record.EventRecorder, obj *corev1.ConfigMap) {
	if obj.Data["replicas"] == "" {
		recorder.Eventf(obj, corev1.EventTypeWarning, "InvalidSpec", "%s has no replicas", obj.Name)
		return
	}
	recorder.Event(obj, corev1.EventTypeNormal, "Synced", "synced successfully")
}

func ExampleRecorder() {
	rec := eventstest.NewRecorder()

	syncFoo(rec, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "broken"}})
	syncFoo(rec, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "good"},
		Data:       map[string]string{"replicas": "2"},
	})

	for _, ev := range rec.Events() {
		fmt.Println(ev)
	}
	fmt.Println(len(rec.Find(corev1.EventTypeWarning, "InvalidSpec")), "warning")
	// In a test: ev := eventstest.RequireEvent(t, rec, corev1.EventTypeWarning, "InvalidSpec")

	// Output:
	// Warning InvalidSpec default/broken: broken has no replicas
	// Normal Synced default/good: synced successfully
	// 1 warning
}
