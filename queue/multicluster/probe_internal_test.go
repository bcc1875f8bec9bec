package multicluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestProbeOnceBoundsAClientWithoutRESTClient: a client whose discovery
// has no REST client (a fake clientset, a wrapper) is asked for the
// version without a context; a probe of one whose answer hangs still
// fails within its timeout, so the member is declared unreachable.
func TestProbeOnceBoundsAClientWithoutRESTClient(t *testing.T) {
	client := fake.NewClientset()
	release := make(chan struct{})
	client.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	answered := make(chan error, 1)
	const timeout = 200 * time.Millisecond
	start := time.Now()
	go func() { answered <- probeOnce(context.Background(), client, timeout) }()
	select {
	case err := <-answered:
		close(release) // the request the probe abandoned ends
		require.Error(t, err, "a probe whose answer hangs succeeded")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), timeout+5*time.Second)
	case <-time.After(timeout + 10*time.Second):
		close(release)
		<-answered
		t.Errorf("the probe returned only once the version was answered, over %s after it began, with a timeout of %s", time.Since(start).Round(time.Millisecond), timeout)
	}
}
