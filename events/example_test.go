package events_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/events"
)

// Foo stands for a custom resource type with generated code; in a real
// controller its AddToScheme comes from the API package.
type Foo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (f *Foo) DeepCopyObject() runtime.Object {
	c := *f
	f.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func addFooToScheme(s *runtime.Scheme) error {
	gv := schema.GroupVersion{Group: "samplecontroller.k8s.io", Version: "v1alpha1"}
	s.AddKnownTypes(gv, &Foo{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}

func ExampleNewRecorder() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // shuts the broadcaster down

	kubeClient := fake.NewClientset() // kubernetes.NewForConfig(cfg) in a real program
	recorder, err := events.NewRecorder(ctx, kubeClient, "foo-controller",
		events.WithAddToScheme(addFooToScheme))
	if err != nil {
		fmt.Println(err)
		return
	}

	foo := &Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "example-foo"}}
	recorder.Event(foo, corev1.EventTypeNormal, "Synced", "Foo synced successfully")

	// Events reach the API server asynchronously.
	var got []corev1.Event
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
		func(ctx context.Context) (bool, error) {
			list, err := kubeClient.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			got = list.Items
			return len(got) > 0, nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	ev := got[0]
	fmt.Println(ev.Type, ev.Reason, ev.InvolvedObject.APIVersion, ev.InvolvedObject.Kind, ev.InvolvedObject.Name)
	fmt.Println(ev.Source.Component+":", ev.Message)

	// Output:
	// Normal Synced samplecontroller.k8s.io/v1alpha1 Foo example-foo
	// foo-controller: Foo synced successfully
}
