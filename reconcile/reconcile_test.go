package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

func TestTerminalMatching(t *testing.T) {
	cause := errors.New("spec.replicas must not be negative")
	tests := []struct {
		name         string
		err          error
		wantTerminal bool
		wantCause    bool
		wantMessage  string
	}{
		{name: "plain error", err: cause, wantCause: true, wantMessage: "spec.replicas must not be negative"},
		{name: "terminal", err: reconcile.Terminal(cause), wantTerminal: true, wantCause: true,
			wantMessage: "terminal error: spec.replicas must not be negative"},
		{name: "wrapped terminal", err: fmt.Errorf("reconcile default/a: %w", reconcile.Terminal(cause)),
			wantTerminal: true, wantCause: true, wantMessage: "reconcile default/a: terminal error: spec.replicas must not be negative"},
		{name: "terminal without cause", err: reconcile.Terminal(nil), wantTerminal: true, wantMessage: "terminal error"},
		{name: "joined", err: errors.Join(errors.New("other"), reconcile.Terminal(cause)), wantTerminal: true, wantCause: true,
			wantMessage: "other\nterminal error: spec.replicas must not be negative"},
		{name: "nil", err: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantTerminal, errors.Is(tt.err, &reconcile.TerminalError{}))
			var te *reconcile.TerminalError
			assert.Equal(t, tt.wantTerminal, errors.As(tt.err, &te))
			assert.Equal(t, tt.wantCause, errors.Is(tt.err, cause))
			if tt.err != nil {
				assert.Equal(t, tt.wantMessage, tt.err.Error())
			}
		})
	}
}

func TestFuncAdapter(t *testing.T) {
	var got string
	var r reconcile.Reconciler[string] = reconcile.Func[string](func(_ context.Context, key string) (reconcile.Result, error) {
		got = key
		return reconcile.Result{RequeueAfter: time.Second}, errors.New("boom")
	})
	res, err := r.Reconcile(context.Background(), "ns/name")
	require.EqualError(t, err, "boom")
	assert.Equal(t, "ns/name", got)
	assert.Equal(t, time.Second, res.RequeueAfter)
	assert.False(t, res.IsZero())
	assert.True(t, reconcile.Result{}.IsZero())
}

func TestStaleCache(t *testing.T) {
	cause := errors.New("409")
	tests := []struct {
		name      string
		err       error
		wantMsg   string
		wantCause bool
	}{
		{name: "with a cause", err: reconcile.StaleCache(cause), wantMsg: reconcile.ErrStaleCache.Error() + ": 409", wantCause: true},
		{name: "without a cause", err: reconcile.StaleCache(nil), wantMsg: reconcile.ErrStaleCache.Error()},
		{name: "wrapped", err: fmt.Errorf("ensure: %w", reconcile.StaleCache(cause)), wantMsg: "ensure: " + reconcile.ErrStaleCache.Error() + ": 409", wantCause: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.err, reconcile.ErrStaleCache)
			assert.Equal(t, tt.wantCause, errors.Is(tt.err, cause))
			assert.Equal(t, tt.wantMsg, tt.err.Error())
			assert.NotErrorIs(t, tt.err, &reconcile.TerminalError{})
		})
	}
}
