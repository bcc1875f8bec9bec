// Package shard spreads the keys of a controller over several replicas of
// an operator: every replica announces itself with a coordination.k8s.io/v1
// Lease of its own, every key belongs to exactly one live replica, and no
// key is ever reconciled by two replicas at once, also while keys move.
//
// A Membership is one replica's seat in a group. A Gate restricts one
// queue.Controller to the keys its replica owns (it is a queue.Ownership):
//
//	m, err := shard.New(shard.Config{Client: kubeClient, Namespace: "foo-system", Group: "foo-controller"})
//	if err != nil {
//		return err
//	}
//	gate := shard.NewGate(m, shard.ObjectNames(deployments.Informer()))
//	ctrl, err := queue.New("deployments", reconciler, queue.WithOwnership(gate))
//	if err != nil {
//		return err
//	}
//	return operator.Run(ctx, operator.WithSharding(m), operator.WithInformers(factory), operator.WithControllers(ctrl))
//
// An operator built on operator.Flags gets the same from --sharded
// (operator.ShardGate).
//
// # Who owns a key
//
// The members of a group are the replicas whose Leases (labelled
// LabelGroup=Group in Namespace) this replica has seen renewed within the
// last LeaseDuration, itself included. A key belongs to the member with the
// highest weight hash(member, key) (rendezvous hashing): every replica that
// sees the same members computes the same owner without talking to the
// others, and when a member joins or leaves, only the keys it takes or
// leaves behind (about 1/N of them) change owner.
//
// # Handoff
//
// Replicas see membership changes at different times, so computing the
// owner is not enough to keep two replicas off a key. Each replica
// therefore publishes, in an annotation of its Lease (AnnotationView), the
// member list it works under, with a generation. The rules are:
//
//  1. When a replica's member list changes, it stops handing out the keys
//     it no longer owns, cancels their in-flight reconciles and waits for
//     them to return, and only then publishes the new list.
//  2. A replica reconciles a key only if the key is its own under the list
//     it sees now and under the list it has published, and only after its
//     Lease informer has delivered that publication back to it.
//  3. It also reconciles a key only if no other live member's published list
//     gives that member the key. The old owner of a moving key thus keeps
//     it until it has published a list without it (rule 1 guarantees it has
//     stopped by then) or until its Lease has expired.
//
// Rules 2 and 3 together are a write-then-read handshake on the API
// server. Suppose replicas A and B both want key k. Each writes a list
// giving itself k, then reads the other's published list from its informer,
// after its own write came back on the same watch. The watch delivers
// changes in the order the API server made them, so whichever of the two
// writes came second sees the first, and that replica leaves k alone.
//
// # Timing
//
// A member that cannot renew its Lease for RenewDeadline (measured from the
// moment it sent its last renewal that succeeded within LeaseDuration -
// RenewDeadline) revokes every claim: it
// cancels its in-flight reconciles, reconciles nothing more, and Run
// returns an error wrapping ErrLeaseLost. The others consider it gone
// LeaseDuration after they last saw its Lease change, which is no earlier
// than it sent that renewal, and only once their own renewals sent after
// that came back through their Lease informer: a watch that falls behind
// cannot make a live member look gone. Config requires LeaseDuration > RenewDeadline
// + RetryPeriod; the difference is what a cancelled reconcile has to
// return, and it must also cover the difference in the rates of the
// replicas' clocks over one LeaseDuration (the clocks need not agree on the
// time of day). As with package leader, reconcilers must honour their
// context. As with any lease, a process paused for longer than that margin
// (a stopped VM, say) may finish a reconcile it was in when it wakes, before
// it notices; it starts no new one. A key of a member that stopped normally moves at once: the
// member drains, then deletes its Lease. A key of a member that was killed
// moves after LeaseDuration plus the time for the survivors to publish.
//
// Members delete the Leases of members that have been gone for two
// LeaseDurations, so killed replicas leave nothing behind.
//
// # What each replica caches
//
// Ownership filters the queue, not the informers: every replica caches
// every object its controllers watch, and sharding divides the reconciles
// and the writes, not the memory. Objects carry no shard label, so the
// informers have nothing to filter on.
//
// # RBAC
//
// Each replica needs get, list, watch, create, update and delete on leases
// in Namespace (group coordination.k8s.io).
package shard
