package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// A member dropped from spec.members while it does not answer stays in the
// status as Removing; if the ConfigSet is deleted before it answers again,
// the finalizer waits for it, and its ConfigMap is removed once it does.
func TestConfigMapLeftWhenMemberDroppedFromSpecWhileUnreachableThenDeleted(t *testing.T) {
	ctx := context.Background()
	w := start(t, "east")
	// west joins with its reactor in place: a fake's reactors may not be
	// changed while the Fleet's probes read them.
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
	require.Equal(t, map[string]string{"color": "blue"}, w.data("west"))

	// west stops answering (its probes fail, and engaging it again fails).
	w.mu.Lock()
	westServer := w.members["west"]
	delete(w.members, "west")
	w.mu.Unlock()
	down.Store(true)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": multicluster.ReasonUnreachable}, "False/"+multicluster.ReasonMembersUnreachable)

	// The user narrows the ConfigSet to east, then deletes it, while west is down.
	cs := w.get().DeepCopy()
	cs.Spec = configSet("blue", "east").Spec
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Update(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonRemoving}, "False/"+multicluster.ReasonMembersUnreachable)
	require.NoError(t, w.mgmt.FleetV1alpha1().ConfigSets("app").Delete(ctx, "settings", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return w.data("east") == nil }, waitFor, 5*time.Millisecond, "east cleaned up")
	require.NotNil(t, w.get(), "the finalizer waits for west")

	// west answers again: its ConfigMap is removed, then the finalizer goes.
	w.mu.Lock()
	w.members["west"] = westServer
	w.mu.Unlock()
	down.Store(false)
	require.Eventually(t, func() bool { return w.data("west") == nil }, waitFor, 10*time.Millisecond,
		"west still holds the ConfigMap of the deleted ConfigSet: %v", w.data("west"))
	require.Eventually(t, func() bool { return w.get() == nil }, waitFor, 5*time.Millisecond, "the finalizer goes")
}
