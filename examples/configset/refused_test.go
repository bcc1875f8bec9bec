package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// A member its Provider refused (a selected kubeconfig Secret that is
// malformed) was never engaged and holds nothing of the operator's, and the
// Fleet stops a refused member "as if it left"; yet a ConfigSet's deletion
// waits for it to be cleaned up, for as long as the Secret stays as it is:
// the finalizer never goes.
func TestRefusedMemberBlocksDeletionForever(t *testing.T) {
	ctx := context.Background()
	w := start(t, "east")
	w.report.Refuse("broken", errors.New(`secret members/broken: no key "kubeconfig"`))
	_, err := w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "broken": multicluster.ReasonUnreachable}, "False/"+multicluster.ReasonMembersUnreachable)

	require.NoError(t, w.mgmt.FleetV1alpha1().ConfigSets("app").Delete(ctx, "settings", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return w.data("east") == nil }, waitFor, 5*time.Millisecond, "east cleaned up")
	require.Eventually(t, func() bool { return w.get() == nil }, 5*time.Second, 10*time.Millisecond,
		"the finalizer is still there, waiting for the refused member: %+v", w.get())
}
