package widget_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"

	"example.com/widget"
)

// A schedule on a fake clock: each ConfigMap goes when its time comes, in
// order, and the test moves the clock instead of waiting.
func TestExpiryOnAFakeClock(t *testing.T) {
	ctx := t.Context()
	start := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	expiring := func(name string, after time.Duration) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Annotations: map[string]string{widget.ExpiresAt: start.Add(after).Format(time.RFC3339)}}}
	}
	kube := fake.NewClientset(expiring("soon", time.Minute), expiring("later", time.Hour),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "forever"}})
	reconciletest.Strict(kube)
	factory := informers.NewSharedInformerFactory(kube, 0)
	clk := clocktesting.NewFakeClock(start)
	ctrl, err := widget.NewExpiryController(kube, factory.Core().V1().ConfigMaps(), clk, queue.WithClock(clk))
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory))

	left := func() []string {
		list, err := kube.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		return names
	}
	queuetest.Advance(t, ctrl, clk, 0, kube)
	assert.ElementsMatch(t, []string{"soon", "later", "forever"}, left())
	queuetest.Advance(t, ctrl, clk, time.Minute, kube)
	assert.ElementsMatch(t, []string{"later", "forever"}, left(), "one minute in")
	queuetest.Advance(t, ctrl, clk, 58*time.Minute, kube)
	assert.ElementsMatch(t, []string{"later", "forever"}, left(), "a minute before the hour")
	queuetest.Advance(t, ctrl, clk, 24*time.Hour, kube)
	assert.ElementsMatch(t, []string{"forever"}, left(), "the next day")

	_, err = kube.CoreV1().ConfigMaps("ns").Create(ctx, expiring("past", -time.Minute), metav1.CreateOptions{})
	require.NoError(t, err)
	queuetest.Advance(t, ctrl, clk, 0, kube)
	_, err = kube.CoreV1().ConfigMaps("ns").Get(ctx, "past", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "an expiry in the past deletes at once: %v", err)
}
