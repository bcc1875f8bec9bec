package multicluster_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// contextFactory is an informer.Factory that also offers
// StartWithContext, as client-go's generated factories do, and reports
// the context it was started with.
type contextFactory struct {
	started chan context.Context
}

func (f *contextFactory) Start(<-chan struct{}) {}

func (f *contextFactory) StartWithContext(ctx context.Context) { f.started <- ctx }

func (f *contextFactory) WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool {
	return map[reflect.Type]bool{}
}

func (f *contextFactory) Shutdown() {}

// A member's informer factories that offer StartWithContext are started
// with the member's context: their informers log with the member's
// logger (which names the cluster), and stop when the member leaves.
func TestMemberFactoryStartsWithTheMembersContext(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	c := newClusters("a")
	fac := &contextFactory{started: make(chan context.Context, 1)}
	p := newProvider()
	fleet, err := multicluster.New("test", p, func(_ context.Context, cl *multicluster.Cluster) (*member, error) {
		cl.AddInformers(fac)
		return &member{name: cl.Name, client: cl.Client}, nil
	}, multicluster.WithClients(c.newClient))
	require.NoError(t, err)
	ctrl, err := multicluster.NewController(fleet, "test", reconcileNothing)
	require.NoError(t, err)
	fleetErr, ctrlErr := make(chan error, 1), make(chan error, 1)
	go func() { fleetErr <- fleet.Run(ctx) }()
	go func() { ctrlErr <- ctrl.Run(ctx) }()
	defer func() {
		cancel()
		for _, errs := range []chan error{fleetErr, ctrlErr} {
			select {
			case err := <-errs:
				assert.NoError(t, err)
			case <-time.After(waitFor):
				t.Error("the fleet or its controller did not stop")
			}
		}
	}()
	var members multicluster.Members
	select {
	case members = <-p.members:
	case <-time.After(waitFor):
		t.Fatal("the provider did not run")
	}
	members.Set("a", c.config("a"))
	members.Synced()

	var started context.Context
	select {
	case started = <-fac.started:
	case <-time.After(waitFor):
		t.Fatal("the member's factory was not started with a context (StartWithContext)")
	}
	klog.FromContext(started).Info("an informer's line")
	i := slices.IndexFunc(buf.Data(), func(e ktesting.LogEntry) bool { return e.Message == "an informer's line" })
	require.GreaterOrEqual(t, i, 0)
	kv := buf.Data()[i].WithKVList
	j := slices.Index(kv, any("cluster"))
	require.True(t, j >= 0 && j+1 < len(kv), "the line of the member's informer names no cluster: %v", kv)
	assert.Equal(t, "a", kv[j+1])

	members.Delete("a")
	select {
	case <-started.Done():
	case <-time.After(waitFor):
		t.Fatal("the context of the member's informers did not end when it left")
	}
}
