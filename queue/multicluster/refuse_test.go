package multicluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// A refused member's Status.Since is when the refusal started: refused
// again with the same message (a new error value), it stays; refused for
// another reason, it moves.
func TestRefusedMemberSince(t *testing.T) {
	f := startFleet(t, newClusters(), newRecorder().copyCluster)
	r, ok := f.members.(multicluster.Refuser)
	require.True(t, ok, "the Fleet's Members implement Refuser")
	status := func() multicluster.Status {
		t.Helper()
		s, ok := f.fleet.Status("evil")
		require.True(t, ok, "the refused member has a Status")
		return s
	}
	// later waits until the clock has passed since.
	later := func(since time.Time) {
		t.Helper()
		require.Eventually(t, func() bool { return time.Now().After(since) }, waitFor, time.Millisecond)
	}

	r.Refuse("evil", errors.New(`exec plugin "sh": not allowed`))
	first := status()
	later(first.Since)
	r.Refuse("evil", errors.New(`exec plugin "sh": not allowed`))
	again := status()
	assert.False(t, again.Ready)
	assert.EqualError(t, again.Err, `exec plugin "sh": not allowed`)
	assert.True(t, again.Since.Equal(first.Since), "Since moved from %s to %s for the same refusal", first.Since, again.Since)

	later(first.Since)
	r.Refuse("evil", errors.New(`auth provider "gcp": not allowed`))
	other := status()
	assert.EqualError(t, other.Err, `auth provider "gcp": not allowed`)
	assert.True(t, other.Since.After(first.Since), "Since stayed although the refusal changed")

	f.members.Delete("evil")
	_, ok = f.fleet.Status("evil")
	assert.False(t, ok, "a deleted member has no Status")
	later(other.Since)
	r.Refuse("evil", errors.New(`auth provider "gcp": not allowed`))
	assert.True(t, status().Since.After(other.Since), "a refusal after a Delete is a new one")
}
