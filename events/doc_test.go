package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/events"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

// recordSynced is the package documentation's example.
func recordSynced(ctx context.Context, kubeClient kubernetes.Interface, foo *samplev1alpha1.Foo) error {
	recorder, err := events.NewRecorder(ctx, kubeClient, "foo-controller",
		events.WithAddToScheme(samplev1alpha1.AddToScheme))
	if err != nil {
		return err
	}
	recorder.Event(foo, corev1.EventTypeNormal, "Synced", "Foo synced successfully")
	return nil
}

func TestPackageDocExample(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	foo := &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "example-foo"}}
	require.NoError(t, recordSynced(ctx, client, foo))
	require.Eventually(t, func() bool {
		list, err := client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 1 && list.Items[0].Reason == "Synced"
	}, 10*time.Second, time.Millisecond)
}
