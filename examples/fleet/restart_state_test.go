package main

import (
	"context"
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
)

// The copier restarts while nothing changed: east holds the copy, the
// source's state says Synced. The source is reconciled while east is
// still being engaged (its client takes a moment to build, as a remote
// cluster's does): the state recorded stands until east is ready, and is
// then found unchanged. A restart patches nothing.
func TestRestartKeepsSyncedState(t *testing.T) {
	src := source("blue")
	src.Annotations = map[string]string{StatusPrefix + "east": StateSynced}
	w := &world{mgmt: fake.NewClientset(src), members: map[string]*fake.Clientset{"east": fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings", Labels: map[string]string{LabelCopiedBy: fleetName}}, Data: src.Data})}}
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
	require.Equal(t, StateSynced, w.states()[StatusPrefix+"east"])

	var patches []string
	for _, a := range w.mgmt.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patches = append(patches, string(p.GetPatch()))
		}
	}
	require.Empty(t, patches, "a restart with nothing changed patches the source's state")
}
