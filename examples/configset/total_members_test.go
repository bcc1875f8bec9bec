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

// apis/fleet/v1alpha1: "TotalMembers counts the members the ConfigSet
// goes to" (and `kubectl get` shows it as "Of", beside readyMembers). A
// member dropped from spec.members that still holds the ConfigMap (it
// does not answer, so its removal waits) is listed Removing, and counted
// in totalMembers: a ConfigSet that goes to east only reads "1 of 2".
func TestTotalMembersCountsOnlyMembersTheConfigSetGoesTo(t *testing.T) {
	ctx := context.Background()
	w := start(t, "east")
	var down atomic.Bool
	west := newMember()
	west.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errors.New("connection refused")
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

	// west stops answering, and the ConfigSet is narrowed to east.
	w.mu.Lock()
	delete(w.members, "west")
	w.mu.Unlock()
	down.Store(true)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": multicluster.ReasonUnreachable}, "False/"+multicluster.ReasonMembersUnreachable)
	cs := w.get().DeepCopy()
	cs.Spec = configSet("blue", "east").Spec
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Update(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonRemoving}, "False/"+multicluster.ReasonMembersUnreachable)

	cs = w.get()
	assert.Equal(t, int32(1), cs.Status.ReadyMembers)
	assert.Equal(t, int32(1), cs.Status.TotalMembers, "the ConfigSet goes to east only (spec.members %v); west is Removing: status %+v", cs.Spec.Members, cs.Status.Members)
}
