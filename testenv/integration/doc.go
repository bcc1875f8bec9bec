// Package integration tests the Foo controller (package
// github.com/ctrlkit/ctrlkit/foo) against a real kube-apiserver and etcd,
// with the controller running in the test process.
//
// A real API server shows what fake clientsets cannot: the CRD's schema
// validation and defaulting, the status and scale subresources,
// resourceVersion conflicts, owner references as the server stores them, and
// Events as they land in the API. There is no controller-manager, so the
// tests play the deployment controller themselves (they write a
// Deployment's status) and there is no garbage collection.
//
// One API-server-only control plane serves the whole test binary (see
// TestMain); every test gets its own namespace and its own controller,
// scoped to that namespace and authenticated as the static-token user
// "foo-controller", which is bound to the ClusterRole of
// examples/foo/deploy/rbac.yaml. The API server's audit log tells that
// user's requests apart from the test's own, so the tests count exactly
// what the controller wrote.
//
// Run it from the testenv module once the binaries are built (see
// make testenv-binaries at the repository's root):
//
//	go test -race ./integration/
package integration
