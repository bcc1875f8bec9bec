package optional_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// Once the APIs shut down (the process stops, or a fleet's member leaves
// and its APIs end with it), the Informer reports Stopped and its
// ctrlkit_api_watch_state series is removed: it does not say "running"
// for a member that left.
func TestMetricsRemovedAtShutdown(t *testing.T) {
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
