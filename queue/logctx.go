package queue

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
)

// loggerContextKey finds the key under which logr stores a logger in a
// context, by watching what logr.FromContext asks for. Knowing it lets a
// reconcile context build its logger only when someone looks it up, which
// keeps the worker loop free of allocations for reconcilers that do not log.
// It returns nil if the key cannot be observed; callers then attach the
// logger eagerly.
func loggerContextKey() any {
	probe := &keyProbe{Context: context.Background()}
	_, _ = logr.FromContext(probe)
	return probe.key
}

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	if p.key == nil {
		p.key = key
	}
	return nil
}

// reconcileContext is the context handed to one Reconcile call. It answers
// logger look-ups with the controller's logger plus the key and reconcile ID,
// built on first use, and delegates everything else to its parent.
type reconcileContext[K comparable] struct {
	context.Context
	ctrl *Controller[K]
	key  K
	id   uint64

	once   sync.Once
	logger logr.Logger
}

func (rc *reconcileContext[K]) Value(key any) any {
	if key == rc.ctrl.loggerKey {
		return rc.getLogger()
	}
	return rc.Context.Value(key)
}

func (rc *reconcileContext[K]) getLogger() logr.Logger {
	rc.once.Do(func() {
		rc.logger = rc.ctrl.logger.WithValues("key", rc.key, "reconcileID", rc.id)
	})
	return rc.logger
}

// String names the context in panics and debug output.
func (rc *reconcileContext[K]) String() string { return "queue.reconcileContext" }
