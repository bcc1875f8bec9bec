package operator_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// brokenFactory is a factory whose Err reports that it cannot work, as an
// optional.APIs built wrong does.
type brokenFactory struct {
	informers.SharedInformerFactory
	err error
}

func (f brokenFactory) Err() error { return f.err }

// Run refuses a factory whose Err reports an error, with that error, and
// runs nothing, instead of waiting for it to sync until the timeout.
func TestRunRefusesABrokenFactory(t *testing.T) {
	broken := errors.New("built without a clientset")
	ran := false
	err := operator.Run(context.Background(),
		operator.WithInformers(brokenFactory{SharedInformerFactory: informers.NewSharedInformerFactory(fake.NewClientset(), 0), err: broken}),
		operator.WithControllers(stub{run: func(context.Context) error { ran = true; return nil }}))
	require.ErrorIs(t, err, broken)
	assert.False(t, ran, "a controller ran beside a broken factory")
}

// contextFactory notes the context StartWithContext was given.
type contextFactory struct {
	informers.SharedInformerFactory
	started chan context.Context
}

func (f contextFactory) Start(stop <-chan struct{}) {
	f.started <- nil
	f.SharedInformerFactory.Start(stop)
}

func (f contextFactory) StartWithContext(ctx context.Context) {
	f.started <- ctx
	f.SharedInformerFactory.Start(ctx.Done())
}

type ctxKey struct{}

// Run starts a factory that has StartWithContext with a context of Run's,
// so that the factory logs with the context's logger, not klog's global
// one.
func TestRunStartsFactoriesWithTheContext(t *testing.T) {
	f := contextFactory{SharedInformerFactory: informers.NewSharedInformerFactory(fake.NewClientset(), 0), started: make(chan context.Context, 2)}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "run's"))
	err := operator.Run(ctx, operator.WithInformers(f), operator.WithControllers(stub{run: func(context.Context) error { cancel(); return nil }}))
	require.NoError(t, err)
	require.Len(t, f.started, 1, "the factory was started more than once, or not")
	started := <-f.started
	require.NotNil(t, started, "the factory was started with Start, not StartWithContext")
	assert.Equal(t, "run's", started.Value(ctxKey{}), "the factory was started with a context not derived from Run's")
}
