// Package shard spreads the keys of a controller over several replicas of
// an operator: every replica announces itself with a coordination.k8s.io/v1
// Lease of its own, every key belongs to exactly one live replica, no key
// is ever reconciled by two replicas at once, also while keys move, and
// each replica caches only the objects of its own keys.
//
// A Membership is one replica's seat in a group. A Gate restricts one
// queue.Controller to the keys its replica owns (it is a queue.Ownership,
// given to Controller.Restrict); Informer makes an informer factory's
// informer of one kind cache only what the replica needs:
//
//	m, err := shard.New(shard.Config{Client: kubeClient, Namespace: "foo-system", Group: "foo-controller"})
//	if err != nil {
//		return err
//	}
//	// The factory's Deployment informer caches only this replica's Deployments.
//	api := kubeClient.AppsV1().Deployments("")
//	if err := shard.Informer[*appsv1.Deployment](m, factory.InformerFor, api.List, api.Watch, shard.ByName); err != nil {
//		return err
//	}
//	deployments := factory.Apps().V1().Deployments()
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
// (operator.Flags.Membership and operator.Shard).
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
//     not come back do not count, so a replica that wakes from a pause of
//     its process cannot claim keys from what it saw before the pause.
//     The monotonic clock of a machine suspended and resumed stands still
//     meanwhile: such a replica's claims look valid to it for up to the
//     rest of RenewDeadline after resume, though the others may have
//     taken its keys (see docs/design.md).
//   - The others count a member gone once its Lease has not changed for
//     LeaseDuration, measured from when they saw the change up to the send
//     time of their own latest write that came back: a watch that falls
//     behind cannot make a live member look gone.
//
// Config requires LeaseDuration > RenewDeadline + RetryPeriod,
// RenewDeadline > RetryPeriod, and a write timeout (see Config) of at
// least 100ms. The difference, LeaseDuration - RenewDeadline, must cover the time a
// cancelled reconcile takes to return, plus any pause of the process while
// it holds a claim, plus the difference in the rates of the replicas'
// clocks over one LeaseDuration. As with package leader, reconcilers must
// honour their context; a process paused for longer than that margin while
// it is in a reconcile may finish that reconcile when it wakes, before it
// notices; it starts no new one, as its monotonic clock went on. A
// machine suspended (or a VM paused, with some hypervisors) stops that
// clock too: see docs/design.md for what such a replica does on resume.
//
// A replica that stops normally revokes its claims, waits for them,
// publishes that it left and deletes its Lease (only the version that says
// so), so its keys move at once. The keys of a member that was killed move
// after LeaseDuration plus the time for the survivors to publish. A Lease
// that is deleted while its member has not published that it left (by
// hand, say) still counts until it expires for the members that saw it;
// a replica that starts after the deletion cannot see it, so every process
// claims nothing until LeaseDuration after its first step, by when such a
// member has stopped. Members delete the Leases of members gone for two
// LeaseDurations, so killed replicas leave nothing behind.
//
// A replica restarted under the identity of a process that is gone (a pod
// name, say) finds its Lease still there and takes it over; it claims
// nothing until RenewDeadline after its first write came back, by when the
// former process, if it still ran, has stopped, and if it stops normally
// before then, it publishes that it left only then (or, if none of its
// writes came back, not at all: the Lease expires). A Lease renewed by
// another process of the same identity makes Run return
// leader.ErrLeaseLost.
//
// # How the protocol is tested
//
// A seeded deterministic simulation in the package's tests drives three to
// six replicas over an in-memory API server, each running the code Run
// runs: the Membership's loop (a deterministic driver that joins, renews,
// steps the protocol, applies views, reports released claims in order,
// deletes departed members' Leases and leaves), its Gate and its sharded
// caches (the filter, the record of what it passed, the freshness check,
// the relists and the drops, over a client-go indexer), with only the API
// server, the network, time, the processes, and client-go's reflector and
// informer queue around each cache simulated. After every event it checks
// that no key is held by two processes, that every claim is backed by
// every list its Lease may show, and that a replica claiming a key that
// another process wrote last has that write in its cache (every reconcile
// writes its key's object); that a key's object never leaves the cache of
// a replica while it reconciles the key; that an object moving to
// another key reaches the store as a deletion under the key it left; that
// no change of view gives keys when the member lists say it cannot; and,
// once the faults stop, that every key is owned by exactly one live
// replica and reconciled by it within RenewDeadline (a Lease lost after
// the faults stopped), a restart of that process and 3*LeaseDuration,
// that only the live members' Leases are left, and that every replica's
// caches hold exactly the objects of the keys it wants, and those of no
// key, at their latest versions. Each process also runs a cache of
// referenced objects (see Objects the primaries refer to), which its
// primaries' store tells of each change as the informer's handlers would:
// a replica that comes to own a gained key holds what the key's object
// referred to when its relist was taken, and once the faults stop holds
// exactly what the keys it wants refer to. The scheduler chooses every
// request's latency and outcome (errors, conflicts, answers lost after the
// write landed, timeouts before it did), requests that hang until the
// timeout the driver gave them and land later or never, an API server
// that answers one process, or all, late but within the timeout for a
// while, watch, informer-queue and handler delays, watch stalls longer
// than a relist, references that move, objects moving between keys while
// events of them are still queued, partitions, pauses, steps of each
// process's wall clock (milliseconds to days, forward and back) while its
// monotonic clock goes on, the rates of the monotonic clocks, kill -9,
// restarts under the same identity (also while the former process still
// runs), a live member's Lease deleted by hand, joins and normal stops.
//
// One schedule in five has only the faults a Lease exists to ride out: a
// process's lone hung requests (at most one in any RenewDeadline), a
// slow API server (answers within half their timeout), wall clock steps
// and clock rates, with fast watches. There no replica may give up its
// Lease, and once the group has settled no key or member cluster may
// move and every replica keeps seeing the same members: a request
// timeout that lets one hung renewal use up the renew deadline, or a
// duration read from the wall clock, fails these at once. Every 50th
// schedule also runs again with every wall clock running backwards from
// another date, and must make the same claims at the same times: the
// wall clock is read only for the RenewTime and AcquireTime that the
// Leases show people.
//
// Each process also holds the member clusters of a fleet as
// multicluster.Fleet does, with the same code: a second Gate of its
// Membership over the clusters' names and the engagements that Fleet keeps
// under it (when a cluster is engaged, made ready, drained and released,
// and what each reconcile of its keys must claim). Only the Fleet's
// goroutines around them are simulated: a provider that tells each process
// of members joining, leaving and rotating their credentials after delays
// of its own, attempts to engage a member (failing while it is
// unreachable), probes that give up on a member that stopped answering,
// the backoff, and the reconciles. After every event it checks that no
// cluster's keys are reconciled by two processes at once, that such a
// reconcile is backed by every list its process's Lease may show, starts
// only in a cluster its process has engaged and not been told to leave,
// and writes only while that engagement lasts, and that no process holds
// two engagements of one cluster; and, once the faults stop, that every
// member is engaged and ready with its current credentials in its owner
// alone, its keys reconciled by it, and no cluster that left is held.
// Attempts to engage a member also hang until the sync timeout now and
// then. The engagements read no clock: they hold their clusters under
// the Gate's claims, which the Lease faults above reach.
//
// make mutants plants plausible bugs in this package and in the fleet's
// engagements, one at a time, and reports which the simulation alone and
// the package's tests catch; docs/operator.md gives its latest score.
//
// # What each replica caches
//
// A replica learns which objects are its own from the objects alone: a
// Route names the key each object belongs to (ByName: the object's own
// "namespace/name", for the controller's primary kind; ByController: the
// key of its controller owner, for what the controller creates, so that a
// Foo's Deployment follows its Foo), and the replica hashes that key as
// its Gates do. Nothing is written to any object, there is no webhook and
// no other process; names made with generateName, cluster-scoped objects
// (ByName gives "name") and namespaced children of cluster-scoped owners
// (ByClusterScopedController) are placed alike. A sharded informer holds:
//
//   - the objects of the keys that the member list the replica works
//     under gives it: a superset of the keys it owns, so that keys it is
//     about to take over are in already;
//   - the objects its Route places under no key (a Deployment no Foo
//     controls), which every replica keeps;
//   - and nothing at all of the other keys' objects.
//
// The filter sits in the informer's ListerWatcher: list items and watch
// events of keys the replica does not want never reach the store, and an
// event that moves an object it passed to such a key (a new controller)
// reaches it as the deletion of the object as it was passed, so that a
// handler such as owner.EnqueueOwner tells the key the object left. What
// the store holds is judged from what the filter passed, not from the
// store, which lags behind by the informer's queue. When its member list
// changes, the replica stops owning the keys it no longer wants, cancels
// their reconciles and waits for them to return, and only then drops
// their objects from the stores, in place, without a request or an event,
// and without changing the resourceVersion the store reports; until then
// those objects stay and their events keep reaching the store, so that a
// reconcile being cancelled never sees its objects vanish as if deleted.
//
// # Objects the primaries refer to
//
// An object that a controller reads but does not own (a ConfigMap a
// schedule names, a Secret a Foo points at) has no controller owner to
// route it by, and may be read by several keys. Referenced makes its
// informer hold an object while a primary that this replica keeps refers
// to it, judged through an index of the primaries' informer that files
// each primary under the keys of the objects it refers to (the same index
// that maps a changed object back to its referrers):
//
//	fooInformer := factory.Samplecontroller().V1alpha1().Foos().Informer()
//	if err := fooInformer.AddIndexers(cache.Indexers{"configMap": configMapOf}); err != nil {
//		return err
//	}
//	api := kubeClient.CoreV1().ConfigMaps("")
//	if err := shard.Referenced[*corev1.ConfigMap](m, kubeFactory.InformerFor, api.List, api.Watch, fooInformer, "configMap"); err != nil {
//		return err
//	}
//
// An object two replicas' keys refer to is in both caches; one no primary
// refers to is in none. When keys move, the referenced objects' informer
// relists only after the primaries' informer holds its relist, so that a
// gained key owns what its primary refers to from its first reconcile. A
// reference that moves while its key stays (a primary changed to name
// another object, or created naming one) costs one relist of the
// referenced kind, shared by the references added while it is pending
// (a change that keeps a primary's references costs nothing); until that
// relist reaches the store the new reference reads as missing, and the
// object's arrival is an add event that the index maps back to its
// referrers. A reference removed drops its object at once unless another
// kept primary still refers to it.
//
// # Gaining keys
//
// Until the old owner let a key go, that process wrote the key's objects,
// and events of its last writes may still be on their way to the new
// owner. So whenever a change of view may give the replica keys it did
// not own (judged from the member lists: a replica joining takes keys but
// gives none, one leaving gives the survivors its keys), the Membership
// asks every sharded informer to relist: its watch ends with an expiry
// (410), and the reflector lists again, which Informer makes a
// consistent, paginated read. That list is sent after the view changed,
// hence after the old owner published that it let the key go (or its
// Lease expired), hence after its last write. The keys of that change are
// owned (by Gate.Claim, Gate.Owns and the scans that enqueue gained keys)
// only once every sharded informer's store holds that list: the informer
// sees its store take the list's objects (or, for a list without any, the
// objects passed before it and nothing it keeps left over), whether or
// not client-go's AtomicFIFO gate is on. A resourceVersion the store
// reports says nothing here: the store may have reached the list's
// revision before it took the list, since the objects of the gained keys
// never passed the filter before. A replica therefore never reconciles a
// key it gained from a cache older than the old owner's last write; the
// simulation checks exactly that (see How the protocol is tested).
//
// # What it costs
//
// A group has at most MaxMembers (32) members: every member renews its
// Lease, which carries its member list, every RetryPeriod, and every
// member watches every Lease, so the watch traffic grows with the cube of
// the group's size (about 0.7 MB/s at 32 members with the default
// timings). A replica that would make the group larger leaves before it
// claims anything, and Run returns an error wrapping ErrGroupFull.
//
// Keys a replica loses cost it nothing. The API server serves every
// replica the watch of every object of a sharded kind, as it does
// unsharded replicas (the objects carry nothing a server-side selector
// could use), and lists of whole kinds: every sharded informer lists once
// when it starts (keeping only unplaced objects: the replica owns nothing
// yet), once when the replica's first view forms, and once after every
// later change that gives the replica keys. A join thus costs the joiner
// one list of each sharded kind per group of old owners letting keys go
// at once, and the others nothing; a kill -9 costs each survivor one list
// of each kind. Lists are paginated (500 objects per request) and keep
// only the wanted objects of each page, so a relist adds about one page to
// a replica's memory; besides its store, a sharded informer keeps a map
// entry per object it holds (the key and the object, which it shares with
// the store). Each gain also waits for its relist: client-go's reflector
// starts a relist 0.8 to 1.6s after the watch ended, twice as late for
// every further relist within two minutes (until the wait is 30 to 60s),
// and then the list itself takes its time. At 10,000 Foos on the full
// control plane (make bench-shard), a join was complete 14s after the
// joiner was ready, and a kill -9 29s after the kill with the default 15s
// lease; both were measured before every new process held its keys for
// LeaseDuration after its first step (see Timing), which a join now adds.
//
// An object that another replica's key controls is not in this replica's
// caches, also when one of this replica's keys names it: a Foo whose
// spec.deploymentName is a Deployment that another replica's Foo controls
// meets AlreadyExists when it creates it. Package reconcile/write reads
// the Deployment back and asks the Foo controller's mutate function about
// it, which refuses it, so the Foo is reported at once as on an unsharded
// replica. What the refusal cannot see is the other Deployment going
// away: this replica gets no event of it, so the refused Foo is
// reconciled again when it changes or at its informer's resync.
//
// # RBAC
//
// Each replica needs get, list, watch, create, update and delete on leases
// in Namespace (group coordination.k8s.io).
package shard
