// Package shard spreads the keys of a controller over several replicas of
// an operator: every replica announces itself with a coordination.k8s.io/v1
// Lease of its own, every key belongs to exactly one live replica, and no
// key is ever reconciled by two replicas at once, also while keys move.
//
// A Membership is one replica's seat in a group. A Gate restricts one
// queue.Controller to the keys its replica owns (it is a queue.Ownership,
// given to Controller.Restrict):
//
//	m, err := shard.New(shard.Config{Client: kubeClient, Namespace: "foo-system", Group: "foo-controller"})
//	if err != nil {
//		return err
//	}
//	ctrl, err := queue.New("deployments", reconciler)
//	if err != nil {
//		return err
//	}
//	if err := ctrl.Watch(queue.On(deployments.TypedInformer(), informer.EnqueueHandler[*appsv1.Deployment](ctrl))); err != nil {
//		return err
//	}
//	if err := ctrl.Restrict(shard.NewGate(m, shard.ObjectNames(deployments.TypedInformer()))); err != nil {
//		return err
//	}
//	return operator.Run(ctx, operator.WithSharding(m), operator.WithInformers(factory), operator.WithControllers(ctrl))
//
// An operator built on operator.Flags gets the same from --sharded
// (operator.Shard).
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
// member list it works under, with a generation, and stamps every write of
// its Lease with its process and a sequence number, so that it recognises
// its own writes when its Lease informer delivers them back (the echo).
// The rules are:
//
//  1. When a replica's member list changes, it stops handing out the keys
//     it no longer owns, cancels their in-flight reconciles and waits for
//     them to return, and only then publishes the new list.
//  2. A replica claims a key only if the key is its own under the list it
//     works under, under the list of its latest echoed write, and under
//     the list of every write it sent that may still land (one not yet
//     echoed nor refused with a conflict): whatever version of its Lease
//     the others read, now or later, gives it the key.
//  3. It also claims a key only if no other live member's published list
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
// Every write is an update guarded by the Lease's resourceVersion, so once
// a write has come back, no earlier write of the same replica can land
// after it.
//
// # Timing
//
// Every duration is measured on the local monotonic clock: clocks need
// not agree on the time of day, and a step of the wall clock changes
// nothing (the RenewTime a replica writes is for people). The rules are:
//
//   - A replica's claims are valid until RenewDeadline after it sent its
//     latest write that came back through its informer. No claim is made
//     after that, and the replica then revokes every claim and Run returns
//     an error wrapping leader.ErrLeaseLost: renewals that succeed but do
//     not come back do not count, so a replica that wakes from a pause
//     cannot claim keys from what it saw before the pause.
//   - The others count a member gone once its Lease has not changed for
//     LeaseDuration, measured from when they saw the change up to the send
//     time of their own latest write that came back: a watch that falls
//     behind cannot make a live member look gone.
//
// Config requires LeaseDuration > RenewDeadline + RetryPeriod. The
// difference, LeaseDuration - RenewDeadline, must cover the time a
// cancelled reconcile takes to return, plus any pause of the process while
// it holds a claim, plus the difference in the rates of the replicas'
// clocks over one LeaseDuration. As with package leader, reconcilers must
// honour their context; a process paused for longer than that margin while
// it is in a reconcile (a stopped VM, say) may finish that reconcile when
// it wakes, before it notices; it starts no new one.
//
// A replica that stops normally revokes its claims, waits for them,
// publishes that it left and deletes its Lease, so its keys move at once.
// The keys of a member that was killed move after LeaseDuration plus the
// time for the survivors to publish. A Lease that is deleted while its
// member has not published that it left (by hand, say) still counts until
// it expires. Members delete the Leases of members gone for two
// LeaseDurations, so killed replicas leave nothing behind.
//
// A replica restarted under the identity of a process that is gone (a pod
// name, say) finds its Lease still there and takes it over; it claims
// nothing until RenewDeadline after its first write came back, by when the
// former process, if it still ran, has stopped. A Lease renewed by another
// process of the same identity makes Run return leader.ErrLeaseLost.
//
// # How the protocol is tested
//
// A seeded deterministic simulation in the package's tests drives three to
// six replicas over an in-memory API server and checks, after every event,
// that no key is held by two processes and that every claim is backed by
// every list its Lease may show; and, once the faults stop, that every key
// is owned by exactly one live replica and reconciled by it within
// 3*LeaseDuration + RenewDeadline, and that only the live members' Leases
// are left. The scheduler chooses every request's latency and outcome
// (errors, conflicts, lost answers), watch delays, partitions, pauses,
// clock steps and rates, kill -9, restarts under the same identity, joins
// and normal stops.
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
