// Package reconcile defines the contract between a controller's worker loop
// and the logic that brings one object to its desired state.
//
// A Reconciler receives a key (for most controllers a cache.ObjectName) and
// reports what should happen next through its Result and error:
//
//   - nil error and a zero Result: the key is done; its retry backoff is
//     forgotten and it runs again only when something enqueues it.
//   - nil error and Result{RequeueAfter: d}: the backoff is forgotten and the
//     key runs again after d.
//   - a non-nil error: the key is retried with per-key exponential backoff.
//     Conflict errors (HTTP 409) are retried the same way but logged quietly,
//     because optimistic-concurrency conflicts are a normal part of life.
//   - a terminal error (see Terminal): the key is not retried; the error is
//     counted, and logged at error level once: a later reconcile of the
//     key (a periodic recheck, say) that ends with the same error again,
//     with nothing but stale-cache requeues between, logs it quietly.
//   - an error matching ErrStaleCache: the reconcile acted on (or refused
//     to act on) a cache that had not yet seen the controller's own last
//     write, or what the API server answered a write with. The key is
//     requeued with its backoff, quietly: not logged as a failure and not
//     counted as an error, but as a requeue. Such an error must be
//     temporary (see ErrStaleCache).
//   - a panic: recovered by the worker loop, counted, and handled like a
//     non-nil error; the process keeps running.
//
// Example:
//
//	r := reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
//		cm, err := lister.ConfigMaps(key.Namespace).Get(key.Name)
//		if apierrors.IsNotFound(err) {
//			return reconcile.Result{}, nil // deleted: nothing to do
//		}
//		if err != nil {
//			return reconcile.Result{}, err // retried with backoff
//		}
//		if cm.Data["mode"] == "" {
//			return reconcile.Result{}, reconcile.Terminal(errors.New("no mode set")) // retrying cannot help
//		}
//		return reconcile.Result{RequeueAfter: time.Minute}, nil // look again in a minute
//	})
package reconcile

import (
	"context"
	"errors"
	"time"
)

// Result tells the worker loop what to do with a key after a successful
// reconcile. The zero Result means "done until the next event".
type Result struct {
	// RequeueAfter, when positive, makes the key run again after this
	// duration. The key's error backoff is reset either way.
	RequeueAfter time.Duration
}

// IsZero reports whether r asks for nothing beyond the default behaviour.
func (r Result) IsZero() bool { return r == Result{} }

// Reconciler brings the object identified by key to its desired state.
//
// Reconcile must be safe to call concurrently for different keys; the worker
// loop never calls it concurrently for the same key. It should honour ctx:
// the context is cancelled when a per-reconcile timeout expires or when the
// controller's shutdown grace period is over.
type Reconciler[K comparable] interface {
	Reconcile(ctx context.Context, key K) (Result, error)
}

// Func adapts an ordinary function to the Reconciler interface.
type Func[K comparable] func(ctx context.Context, key K) (Result, error)

// Reconcile calls f(ctx, key).
func (f Func[K]) Reconcile(ctx context.Context, key K) (Result, error) { return f(ctx, key) }

// TerminalError marks an error that retrying cannot fix, such as an invalid
// spec. The worker loop does not requeue a key whose reconcile returns an
// error that is, or wraps, a *TerminalError; it counts it each time and logs
// it at error level once per generation of the object while the key's
// reconciles keep ending with the same error (the same text and
// Generation), so that periodic rechecks of an object that stays broken
// are logged quietly, and a new spec that is still refused is logged again.
// Create it with Terminal, or as a literal to give the Generation; match it
// with errors.As, which also gives the cause, or with
// errors.Is(err, &TerminalError{}).
type TerminalError struct {
	// Err is the underlying cause; it may be nil.
	Err error
	// Generation is the metadata.generation of the object the error is
	// about, zero if unknown (as Terminal leaves it).
	Generation int64
}

// Terminal wraps err so that the worker loop does not retry it. Terminal(nil)
// returns a terminal error without a cause, so that returning
// Terminal(someErr) can never accidentally mean success.
func Terminal(err error) error { return &TerminalError{Err: err} }

// Error returns the cause's message prefixed with "terminal error".
func (e *TerminalError) Error() string {
	if e.Err == nil {
		return "terminal error"
	}
	return "terminal error: " + e.Err.Error()
}

// Unwrap returns the cause so that errors.Is and errors.As see through it.
func (e *TerminalError) Unwrap() error { return e.Err }

// Is reports whether target is a *TerminalError, so that
// errors.Is(err, &TerminalError{}) holds for every terminal error.
func (e *TerminalError) Is(target error) bool {
	_, ok := target.(*TerminalError)
	return ok
}

// ErrStaleCache matches the errors that only say the informer cache is
// behind: a read or write refused because the cache has not yet seen the
// controller's own last write of the object, or a write answered with
// AlreadyExists, 409 Conflict, NotFound or 422 Invalid while the cache
// provably has not yet seen the object as the API server has it. Retrying
// after the cache caught up is the whole fix, so the worker loop requeues
// the key with its backoff without logging or counting a failure (its
// outcome is counted as a requeue). Whoever returns such an error must
// know it to be temporary: package reconcile/write gives it only while the
// cache can still be behind and for a bounded time, after which the same
// answer is the real error it is. Create such errors with StaleCache;
// match them with errors.Is(err, ErrStaleCache).
var ErrStaleCache = errors.New("the cache has not yet seen this controller's own last write")

// StaleCache wraps cause (which may be nil) as an error matching
// ErrStaleCache. errors.Is and errors.As see cause through it. Joined with
// other errors (errors.Join), it is handled quietly only when every joined
// error is.
func StaleCache(cause error) error { return &staleCacheError{cause: cause} }

type staleCacheError struct{ cause error }

func (e *staleCacheError) Error() string {
	if e.cause == nil {
		return ErrStaleCache.Error()
	}
	return ErrStaleCache.Error() + ": " + e.cause.Error()
}

func (e *staleCacheError) Unwrap() error { return e.cause }

func (e *staleCacheError) Is(target error) bool { return target == ErrStaleCache }
