package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	fleetfake "github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// An operator (re)started while a ConfigSet is being deleted, before its
// Provider has reported the members (its kubeconfig Secrets not listed
// yet): cleanup sees no member, the finalizer goes, and the members keep
// the ConfigMap for good.
func TestFinalizerRemovedBeforeFleetSynced(t *testing.T) {
	ctx := context.Background()
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(100), members: map[string]*fake.Clientset{"east": newMember()}}
	reconciletest.Strict(w.mgmt)
	// east holds the ConfigMap a previous run applied.
	_, err := w.member("east").CoreV1().ConfigMaps("app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings",
		Labels: map[string]string{fleetv1alpha1.LabelManagedBy: fleetv1alpha1.ManagedBy}}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cs := configSet("blue")
	cs.Finalizers = []string{fleetv1alpha1.Finalizer}
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, cs, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, w.mgmt.FleetV1alpha1().ConfigSets("app").Delete(ctx, "settings", metav1.DeleteOptions{}))
	require.NotNil(t, w.get(), "held by its finalizer")

	// The operator starts; its Provider has not reported anything yet.
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err := newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(w.client), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Second)})
	require.NoError(t, err)
	go func() {
		// The kubeconfig Secrets are listed once the ConfigSet's cleanup
		// has failed for want of them (its key waits for a retry).
		if !assert.Eventually(t, func() bool { return c.hub.Retrying() > 0 }, 5*time.Second, time.Millisecond, "no cleanup tried before the Fleet synced") {
			return
		}
		w.report.Set("east", &rest.Config{Host: "https://east"})
		w.report.Synced()
	}()
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.hub}, operator.WithInformers(factory))
	require.Eventually(t, func() bool { return w.data("east") == nil }, 5*time.Second, 10*time.Millisecond,
		"east keeps the ConfigMap; the ConfigSet (finalizer gone: %v) is %+v", w.get() == nil, w.get())
}
