package multicluster

import (
	"context"
	"sync"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// MemberChange is a change of one member as OnMembers delivers it: the
// member's state when the change is delivered, which is its latest.
type MemberChange struct {
	// Cluster is the member's name.
	Cluster string
	// Held is what the second result of Fleet.Status says: false once
	// the member left, moved to another replica, or before this replica
	// engages it; true while this replica holds it, and for a member its
	// Provider refused (then not Ready, Err the refusal).
	Held bool
	// Status is the member's Status (Fleet.Status), the zero Status when
	// it is not Held.
	Status Status
}

// OnMembers returns a Watch, for Controller.Watch of the controller that
// q is (a controller of the management cluster's objects, usually), that
// adds to q the keys that keys returns for every change of a member of
// f: it joined, became ready, became not ready (its probes failed, it is
// engaged again with new credentials, an attempt to engage it failed
// with a new reason), its Provider refused it, it left or it moved to
// another replica. No polling: the Fleet reports each change as it
// makes it.
//
//	err := hub.Watch(multicluster.OnMembers(fleet, hub, func(multicluster.MemberChange) []cache.ObjectName { return allHubKeys() }))
//
// What is delivered, and in which order:
//   - Changes made from the call of OnMembers on are kept, at most one
//     per member: a change of a member whose earlier change is not
//     delivered yet is merged into it. A delivery carries the member's
//     state when it is delivered (Fleet.Status at that moment), so the
//     last delivery of a member always shows its latest state, and no
//     change is lost however fast they come: a change made after a
//     delivery read the state is delivered again.
//   - Members are delivered in the order of their oldest change not yet
//     delivered; keys runs on the Watch's goroutine, one change at a
//     time, and its keys are added with Add.
//   - The changes are kept while the controller does not run (before it
//     starts, while a standby replica waits for the Lease): it gets them
//     when it runs. So no initial sweep is needed: the hub objects' own
//     informer queues each of them when the controller starts, and every
//     member change from OnMembers on reaches the controller.
//   - Once the controller's context has ended, keys is not called and
//     nothing is added; a change whose keys were not added is kept for
//     the next run. The Watch starts no goroutine of its own.
//
// Give the Watch to one controller. Each call registers with f for as
// long as f lives: call it when wiring the controllers, not per
// reconcile. A Watch whose fleet, queue or keys function is nil is
// refused by Controller.Watch.
func OnMembers[T any, K comparable](f *Fleet[T], q queue.Enqueuer[K], keys func(MemberChange) []K) queue.Watch {
	if f == nil || q == nil || keys == nil {
		return queue.Feed(nil)
	}
	w := f.watch()
	return queue.Feed(func(ctx context.Context) {
		for {
			for ctx.Err() == nil {
				name, ok := w.next()
				if !ok {
					break
				}
				st, held := f.Status(name)
				ks := keys(MemberChange{Cluster: name, Held: held, Status: st})
				if ctx.Err() != nil {
					w.putBack(name)
					return
				}
				if r := tracing.RecorderOf[K](q); r != nil {
					for _, k := range ks {
						r.Trigger(k, tracing.Trigger{Source: tracing.SourceMembers, Object: name})
					}
				}
				for _, k := range ks {
					q.Add(k)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
		}
	})
}

// watch registers a new watcher of f's member changes.
func (f *Fleet[T]) watch() *memberWatch {
	w := &memberWatch{queued: map[string]bool{}, wake: make(chan struct{}, 1)}
	f.mu.Lock()
	f.watchers = append(f.watchers, w)
	f.mu.Unlock()
	return w
}

// memberWatch keeps the names of the members whose Status changed and
// were not delivered yet, one each, oldest first.
type memberWatch struct {
	mu      sync.Mutex
	pending []string        // guarded by mu
	queued  map[string]bool // the names in pending; guarded by mu
	// wake is signalled when a name is added to pending.
	wake chan struct{}
}

// note adds cluster to the pending names, unless it is there already.
func (w *memberWatch) note(cluster string) {
	w.mu.Lock()
	if !w.queued[cluster] {
		w.queued[cluster] = true
		w.pending = append(w.pending, cluster)
	}
	w.mu.Unlock()
	signal(w.wake)
}

// next takes the oldest pending name.
func (w *memberWatch) next() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return "", false
	}
	name := w.pending[0]
	w.pending[0] = ""
	w.pending = w.pending[1:]
	delete(w.queued, name)
	return name, true
}

// putBack makes cluster, taken but not delivered, the oldest pending name
// again, unless a new change made it pending meanwhile.
func (w *memberWatch) putBack(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queued[cluster] {
		return
	}
	w.queued[cluster] = true
	w.pending = append([]string{cluster}, w.pending...)
}
