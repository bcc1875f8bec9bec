package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// A replica whose provider has not reported every member yet (a restart,
// a sharded replica that joins) writes the states of the members it
// holds and leaves the others' alone: a member another replica holds, or
// one this replica has not heard of yet, keeps its state. Once its
// provider synced, the state of a cluster that is no member goes.
func TestCopierLeavesTheStatesItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	w := startUnsynced(t, "west", "east")
	src := source("blue")
	src.Annotations = map[string]string{StatusPrefix + "east": StateSynced, StatusPrefix + "gone": StateSynced}
	_, err := w.mgmt.CoreV1().ConfigMaps("app").Create(ctx, src, metav1.CreateOptions{})
	require.NoError(t, err)
	w.report.Set("west", &rest.Config{Host: "https://west"})
	require.Eventually(t, func() bool { return w.states()[StatusPrefix+"west"] == StateSynced }, waitFor, time.Millisecond,
		"the state of the member held here")
	assert.Equal(t, map[string]string{StatusPrefix + "west": StateSynced, StatusPrefix + "east": StateSynced, StatusPrefix + "gone": StateSynced}, w.states(),
		"the states of the members this replica does not know are left alone")

	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Synced()
	want := map[string]string{StatusPrefix + "west": StateSynced, StatusPrefix + "east": StateSynced}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, w.states()) }, waitFor, time.Millisecond,
		"once synced, the state of a cluster that is no member goes: %v", w.states())
}
