package optional_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// once the APIs shut down (the process stops, or a fleet's
// member leaves and its APIs end with it), the Informer reports Stopped,
// but ctrlkit_api_watch_state keeps saying "running" for it forever: the
// series of a member that left is never cleared or updated.
func TestMetricsAfterShutdown(t *testing.T) {
	m := newFakeMetrics()
	apis := optional.NewAPIs(crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true)), nil, optional.WithMetrics(m), optional.WithName("west"))
	newInformer, _ := fooInformers(fake.NewClientset())
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	stop := startAPIs(t, apis)
	require.Eventually(t, func() bool { return foos.State() == optional.Running && foos.HasSynced() }, waitFor, time.Millisecond)
	stop() // the member leaves: its APIs end
	require.Equal(t, optional.Stopped, foos.State())
	state, _ := m.state("west|foos.samplecontroller.k8s.io/v1alpha1")
	assert.NotEqual(t, optional.Running, state, "the state metric still says running for an Informer whose APIs shut down (State() = %s)", foos.State())
}
