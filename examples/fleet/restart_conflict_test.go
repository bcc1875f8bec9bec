package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// As TestRestartKeepsSyncedState, for a source whose state in east is a
// Conflict (east holds a ConfigMap of its name that is not a copy):
// nothing changed, so a restart patches nothing. The state must not flip
// to Pending once east is ready (the conflicts are kept in memory only,
// so the restarted copier does not know it yet) and back to Conflict.
func TestRestartKeepsConflictState(t *testing.T) {
	src := source("blue")
	conflict := fmt.Sprintf("%s: %s", StateConflict, errNotACopy)
	src.Annotations = map[string]string{StatusPrefix + "east": conflict}
	w := &world{mgmt: fake.NewClientset(src), members: map[string]*fake.Clientset{"east": fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}, Data: map[string]string{"color": "theirs"}})}}
	reconciletest.Strict(w.mgmt)
	factory := informers.NewSharedInformerFactoryWithOptions(w.mgmt, 0, informers.WithNamespace("app"))
	slowClient := func(ctx context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
		time.Sleep(300 * time.Millisecond)
		return w.client(ctx, name, cfg)
	}
	c, err := newCopier(w.mgmt, factory.Core().V1().ConfigMaps(), &w.report, []multicluster.Option{multicluster.WithClients(slowClient)})
	require.NoError(t, err)
	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Synced()
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.copies, c.status}, operator.WithInformers(factory))
	time.Sleep(time.Second) // settled
	require.Equal(t, conflict, w.states()[StatusPrefix+"east"])

	var patches []string
	for _, a := range w.mgmt.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patches = append(patches, string(p.GetPatch()))
		}
	}
	require.Empty(t, patches, "a restart with nothing changed patches the source's state")
}
