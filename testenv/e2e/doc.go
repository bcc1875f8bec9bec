// Package e2e tests the examples/foo binary end to end: it builds the
// binary with go build, starts a full control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok with one fake node),
// and runs the binary as a separate process, the way a cluster would.
//
// The controller authenticates as the ServiceAccount foo-system/foo-controller
// with exactly the RBAC of examples/foo/deploy, so the tests also show that
// those manifests are enough. The API server's audit log tells that
// ServiceAccount's requests apart from everyone else's; the tests use it to
// prove that the controller leaves foreign Deployments alone and writes
// nothing during an idle resync.
//
// TestStrictMatchesAPIServer runs one scenario of Foos and Deployments
// (UIDs, generation, the status subresource, finalizers and
// deletionTimestamp, delete preconditions, garbage collection of
// dependents) against fake clientsets made strict by package
// reconcile/reconciletest and against the full control plane, and asserts
// that what a controller can observe is the same on both.
//
// TestBucketOperator runs examples/bucket and its storage service
// (examples/bucket/store/cmd/bucketstore) as processes, the operator with
// exactly the RBAC of examples/bucket/deploy: buckets created, restored
// when changed or removed behind the operator's back, deleted from the
// service before their Bucket goes, held by the finalizer while the service
// is down, cleaned up by a new operator after a kill -9 mid-cleanup, and a
// bucket the operator did not create refused once (Ready=False
// BucketExists, one Warning, quiet periodic checks), untouched, and left
// in the service when its Bucket is deleted.
//
// TestShardLeaseRenewalFaults puts a proxy that holds requests (the HTTP
// mode of the tests' faultProxy) in front of one of three --sharded
// replicas and makes its Lease renewals slow, one of them hung: the
// replica keeps its keys. Then every Lease request of it hangs: it revokes
// its claims and exits, the others take its keys, and the audit log shows
// no Foo written by two replicas in overlapping windows.
//
// TestTracingFoo runs examples/foo with --tracing-endpoint and the API
// server with tracing, both exporting to an OTLP receiver of the test
// (package otlp), and follows one trace: the test's create of a Foo, the
// Foo's reconcile linked to it, the Deployment's create below it, the API
// server's span of that request linked to it, and the reconcile the
// Deployment's event set off, linked to the reconcile that wrote it.
//
// TestDeployKustomizations applies examples/*/deploy with kubectl apply -k
// to an API server: each kustomization lists every manifest beside it,
// renders each object once, is accepted, and applies again unchanged. The
// test control plane's node is kwok's, which runs no containers, so no
// test starts the operators' images; the tests of
// cmd/internal/image run the binary of examples/foo's image instead.
//
// Every test starts a control plane of its own and runs in parallel with
// the others (go test's -parallel, the number of CPUs by default): the
// tests kill and restart API servers, cut replicas off behind proxies and
// count every request of an identity in the audit log, which a shared
// control plane would mix up. Each example binary is built once per test
// binary and shared.
//
// Run it from the testenv module once the binaries are built (see
// make testenv-binaries at the repository's root):
//
//	go test -race ./e2e/
package e2e
