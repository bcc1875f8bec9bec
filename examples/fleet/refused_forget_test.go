package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

// member.refused gets an entry for every source reconciled in the member
// and loses none: a source that is deleted (or loses its label) keeps its
// entry for as long as the member is engaged, so an operator whose
// sources come and go (generated names) grows without bound.
func TestCopierForgetsRefusalsOfDeletedSources(t *testing.T) {
	ctx := context.Background()
	w, c, mgmtInformers := newWorld(t, "east")
	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Synced()
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.copies, c.status}, mgmtInformers)

	const n = 50
	for i := range n {
		src := source("blue")
		src.Name = fmt.Sprintf("gen-%d", i)
		_, err := w.mgmt.CoreV1().ConfigMaps("app").Create(ctx, src, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	copies := func() int {
		l, err := w.member("east").CoreV1().ConfigMaps("app").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		return len(l.Items)
	}
	require.Eventually(t, func() bool { return copies() == n }, waitFor, 5*time.Millisecond)
	for i := range n {
		require.NoError(t, w.mgmt.CoreV1().ConfigMaps("app").Delete(ctx, fmt.Sprintf("gen-%d", i), metav1.DeleteOptions{}))
	}
	require.Eventually(t, func() bool { return copies() == 0 }, waitFor, 5*time.Millisecond, "the copies go with their sources")

	m, ok := c.fleet.Get("east")
	require.True(t, ok)
	kept := 0
	m.refused.Range(func(any, any) bool { kept++; return true })
	require.Zero(t, kept, "the member keeps %d entries of sources that are gone", kept)
}
