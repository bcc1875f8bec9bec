// Package multicluster runs controllers over many clusters: a Fleet holds
// the member clusters a Provider reports, each with its own client,
// informer factory and event recorder, and the controllers built with
// NewController reconcile Keys that name their cluster.
//
//	var ctrl *queue.Controller[multicluster.Key]
//	fleet, err := multicluster.New("copier", provider, func(ctx context.Context, cl *multicluster.Cluster) (corelisters.ConfigMapLister, error) {
//		configMaps := cl.Informers.Core().V1().ConfigMaps()
//		_, err := configMaps.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{})
//		return configMaps.Lister(), err
//	})
//	if err != nil {
//		return err
//	}
//	if ctrl, err = multicluster.NewController(fleet, "copier", reconcileCopy); err != nil {
//		return err
//	}
//	return operator.Run(ctx, operator.WithControllers(fleet, ctrl))
//
// # Clusters that come and go
//
// A cluster that joins is engaged: its client is built, the engage
// function registers handlers (tagging their keys with the cluster through
// Cluster.Queue) and returns what the reconciler needs of the cluster, and
// the cluster's informers are started. Its keys run only once its caches
// have synced; keys its handlers produce before that are held, not lost,
// as are the keys added to a controller of NewController meanwhile, and
// the same whenever the cluster is not ready again (engaged again after
// failed probes, or with new credentials), and a reconcile cancelled
// because the cluster is engaged again runs again once it is ready. The
// informers of such an attempt are new: an object deleted after the old
// ones stopped is not in their list and reaches no handler, as after a
// restart of a single-cluster operator (see Cluster.Queue).
// A cluster that leaves, or whose config changes, is stopped: its waiting
// keys are dropped when their turn comes, the contexts of its reconciles
// in flight are cancelled (with ErrLeft) and awaited, and only then are
// its informers shut down, so nothing is written to it after it left. A
// cluster that cannot be engaged (unreachable, refusing the credentials,
// caches not synced within WithSyncTimeout) is retried with a backoff and
// reported by Status and Metrics, while the others go on. A cluster whose
// config its Provider refuses (Refuser) is no member, and Status says why.
//
// # Status across members
//
// A fleet operator usually applies an object of the management cluster
// (a hub object) to every member and reports, in its status, where it
// stands in each. OnMembers is a Watch of the members' changes (joined,
// ready, not ready, refused, left, moved) for the hub controller, with
// no polling. Results keeps the result of each member's reconcile of a
// hub object (Set), re-queues the hub key when one changes, drops a
// member's results when it leaves, and builds the per-member status list
// (fleetv1.MemberStatus entries, which an API type can declare) and one
// Ready condition in one call (Status), listing the members that are not
// ready or that their Provider refused as Unreachable, and Unknown while
// the Fleet has not synced. A member that becomes not ready re-queues
// the hub key through OnMembers, not through Results. Results needs every
// member in one process: it refuses a Fleet with WithSharding. Fleet.Each
// walks the members this replica holds for a hub-centric reconcile, one
// member's trouble bounded by a timeout and reported as its error.
//
// # Member configs are untrusted
//
// A member's config comes from whoever may write a Secret or a
// ClusterProfile, while the operator holds every member's credentials: the
// providers of packages queue/multicluster/kubeconfig and
// queue/multicluster/clusterprofile never let it run a command in the
// operator, read the operator's files or turn off TLS verification,
// unless the operator opted in by name (see each package).
//
// A stop of the Fleet drains: no reconcile starts any more, and those in
// flight run on until their controller's shutdown timeout
// (queue.WithShutdownTimeout) cancels them; the clusters' informers are
// shut down once they have returned.
//
// # Fairness
//
// All clusters share one queue, which serves the clusters in turn
// (queue.WithFairness): a cluster with ten thousand keys waiting delays
// another cluster's next key by one key, not ten thousand. Each cluster
// also has its own retry rate limiter, so the retries of one failing
// cluster do not slow the others'.
//
// # Sharding
//
// With WithSharding, the replicas of an operator share the clusters:
// package queue/shard assigns every cluster name to one live replica, and
// a replica engages only its own clusters, so the memory of the caches
// divides with the replicas. A cluster moving to another replica is
// stopped here (its reconciles cancelled with ErrLeft and awaited)
// before the other replica may engage it, and each reconcile holds a
// claim on its cluster's name too, so that a replica paused past its
// Lease starts none in a cluster it may have lost: two replicas never
// reconcile one cluster at once. HasSynced waits for the membership's
// first view and the first attempt of each member this replica owns. The seeded simulation of package queue/shard runs the Fleet's
// rules of engagement (when a cluster is engaged, ready, drained and
// released) under faults and checks exactly that.
package multicluster
