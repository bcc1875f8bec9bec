package queue_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// With WithFairness, a group with a backlog delays another group's key by
// one turn, not by its backlog; without it the key waits behind the whole
// backlog.
func TestFairness(t *testing.T) {
	const backlog = 1000
	byGroup := func(k string) string { g, _, _ := strings.Cut(k, "/"); return g }
	tests := []struct {
		name string
		opts []queue.Option
		// wantBefore is how many keys of the busy group are reconciled
		// before the quiet group's key.
		wantBefore int
	}{
		{name: "fair", opts: []queue.Option{queue.WithFairness(byGroup)}, wantBefore: 1},
		{name: "one group", wantBefore: backlog},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				order []string
				done  = make(chan struct{})
			)
			r := reconcile.Func[string](func(_ context.Context, key string) (reconcile.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, key)
				if len(order) == backlog+2 {
					close(done)
				}
				return reconcile.Result{}, nil
			})
			ctrl, err := queue.New("fair", r, append(tt.opts, queue.WithWorkers(1))...)
			require.NoError(t, err)
			for i := range backlog {
				ctrl.Add("busy/" + strconv.Itoa(i))
			}
			ctrl.Add("quiet/a")
			ctrl.Add("busy/" + strconv.Itoa(backlog))
			stop := startController(t, context.Background(), ctrl)
			select {
			case <-done:
			case <-time.After(waitFor):
				t.Fatal("the keys were not all reconciled")
			}
			require.NoError(t, stop())
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, order, backlog+2)
			at := -1
			for i, k := range order {
				if k == "quiet/a" {
					at = i
				}
			}
			assert.Equal(t, tt.wantBefore, at, "busy keys reconciled before the quiet one")
		})
	}
}
