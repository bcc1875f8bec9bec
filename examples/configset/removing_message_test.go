package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// README.md: a member spec.members no longer names stays in the status as
// Removing until it lost the ConfigMap ("it does not answer, or the
// removal failed"). For a member that answers and whose removal fails,
// neither its entry nor the condition says why: the entry's message and
// the condition's are those of a Pending result ("generation 2 not
// applied yet"), a generation the member is not meant to get, and the
// removal's error appears nowhere in the status.
func TestRemovingMemberStatusSaysWhyRemovalFailed(t *testing.T) {
	ctx := context.Background()
	w := start(t, "east")
	var deny atomic.Bool
	west := newMember()
	west.PrependReactor("delete", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if deny.Load() {
			return true, nil, errors.New(`configmaps "settings" is forbidden: user cannot delete`)
		}
		return false, nil, nil
	})
	w.mu.Lock()
	w.members["west"] = west
	w.mu.Unlock()
	w.report.Set("west", &rest.Config{Host: "https://west"})
	_, err := w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)

	// west answers but refuses the removal; the ConfigSet is narrowed to east.
	deny.Store(true)
	cs := w.get().DeepCopy()
	cs.Spec = configSet("blue", "east").Spec
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Update(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonRemoving}, "False/"+multicluster.ReasonMembersNotReady)

	cs = w.get()
	var entry string
	for _, m := range cs.Status.Members {
		if m.Cluster == "west" {
			entry = m.Message
		}
	}
	cond := cs.Status.Conditions[0].Message
	assert.Contains(t, entry+" | "+cond, "forbidden", "west's removal fails (forbidden), and the status says: entry %q, condition %q", entry, cond)
	assert.NotContains(t, entry, "not applied yet", "west is not meant to get generation %d", cs.Generation)
}
