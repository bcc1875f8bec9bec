package optional_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// docs/optional-apis.md, Metrics: "When the APIs shut down (the process
// stops, or a fleet's member leaves), their series ... are removed ...;
// the Informers' State is then stopped", and State's doc: Stopped is an
// informer stopped "because its APIs shut down", Waiting one whose
// resource "has not been served since the APIs started". An Informer
// whose resource was not served when its APIs shut down still reports
// Waiting: a member that left looks like one waiting for its CRD.
func TestWaitingInformerStoppedAfterShutdown(t *testing.T) {
	apis := optional.NewAPIs(crdClient(), nil)
	newInformer, _ := fooInformers(fake.NewClientset())
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	stop := startAPIs(t, apis)
	require.Eventually(t, foos.HasSynced, waitFor, time.Millisecond)
	require.Equal(t, optional.Waiting, foos.State())
	stop() // the member leaves: its APIs end
	require.Equal(t, optional.Stopped, foos.State(), "the State of an Informer whose APIs shut down")
}
