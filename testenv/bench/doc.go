// Package bench measures ctrlkit side by side with the loops people would
// otherwise write or pick: a hand-written client-go worker loop in the style
// of sample-controller, and controller-runtime's controller. Every benchmark
// runs all its peers in the same `go test -bench` process so that they are
// compared under the same conditions.
//
// The package has no library code; everything lives in its tests:
//
//   - BenchmarkWorkerLoop: a no-op reconcile over 10,000 keys with 1, 2 and 8
//     workers; reports ns/key and allocs/key.
//   - BenchmarkFreshDuringStorm: 20,000 initial-list keys, then 100 fresh
//     changes one millisecond apart, with a 50µs reconcile and 2 workers;
//     reports the latency from each fresh add to the start of its reconcile
//     (p50-µs, p99-µs, max-µs) and the time to drain the whole storm.
//   - BenchmarkInformerMemory: heap retained by informers that synced 10,000
//     Foos and 10,000 Deployments from fake clientsets, with and without
//     informer.StripManagedFields; reports bytes per object.
//   - BenchmarkCacheMemory: heap kept by one informer caching the 100,000
//     Deployments of a real API server (the project's control plane): a
//     client-go informer keeping everything, ctrlkit's stripped and
//     trimmed (informer.Trim) caches, and controller-runtime's cache
//     without and with its managedFields transform; reports bytes per
//     object, live and at the peak of the sync.
//   - BenchmarkFleetFairness: a quiet member cluster joining a fleet
//     (queue/multicluster) while a busy one has 10,000 keys queued, fair
//     and in one queue; reports the time to the quiet cluster's first
//     reconcile.
//   - BenchmarkFleetMemory: 20 member clusters shared by 1, 2 and 4
//     replicas; reports the heap one replica keeps and the members it
//     holds.
//   - TestClusterProfilesAsTheAccessLibraryReadsThem (a test, not a
//     benchmark): queue/multicluster/clusterprofile beside the cluster
//     inventory API's own access library, on ClusterProfiles of the
//     API's Go types served by its CRD.
//
// It is a module of its own, so that controller-runtime and its dependencies
// stay out of ctrlkit and out of the control-plane test module. Run it with
// the script next to this file, which repeats every benchmark, summarises
// the runs with benchstat and writes a markdown report:
//
//	./run.sh /tmp/bench.md
//
// or one benchmark by hand:
//
//	go test -run '^$' -bench WorkerLoop -count 6 .
package bench
