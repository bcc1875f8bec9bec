package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

// README.md: a copy has the source's "namespace, name and data" (the
// copier writes Data and BinaryData), and its state is Synced once it
// does. The state compares Data only: a copy whose binaryData was not
// updated (its writes fail) is reported Synced, for as long as they fail.
func TestCopyWithOldBinaryDataIsNotSynced(t *testing.T) {
	ctx := context.Background()
	w, c, mgmtInformers := newWorld(t, "east")
	var reject atomic.Bool
	for _, verb := range []string{"update", "patch"} {
		w.member("east").PrependReactor(verb, "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			if reject.Load() {
				return true, nil, errors.New("admission webhook denied the request")
			}
			return false, nil, nil
		})
	}
	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Synced()
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.copies, c.status}, mgmtInformers)

	src := source("blue")
	src.BinaryData = map[string][]byte{"logo": []byte("v1")}
	_, err := w.mgmt.CoreV1().ConfigMaps("app").Create(ctx, src, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return w.states()[StatusPrefix+"east"] == StateSynced }, waitFor, time.Millisecond)

	// The copy's writes fail from now on; the source's binaryData changes.
	reject.Store(true)
	src, err = w.mgmt.CoreV1().ConfigMaps("app").Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	src = src.DeepCopy()
	src.BinaryData = map[string][]byte{"logo": []byte("v2")}
	_, err = w.mgmt.CoreV1().ConfigMaps("app").Update(ctx, src, metav1.UpdateOptions{})
	require.NoError(t, err)

	ok := false
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !ok; time.Sleep(10 * time.Millisecond) {
		ok = w.states()[StatusPrefix+"east"] != StateSynced
	}
	cp, err := w.member("east").CoreV1().ConfigMaps("app").Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, ok, "2s after the source's binaryData changed, east's copy holds binaryData %q (the source: %q), and its state is still %q",
		cp.BinaryData["logo"], "v2", w.states()[StatusPrefix+"east"])
}
