// Package generated holds the Go clients of the Foo API
// (github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1), produced
// by the apigen command (github.com/ctrlkit/ctrlkit/cmd/apigen)
// with k8s.io/code-generator and k8s.io/kube-openapi. Its sub-packages are
// never edited by hand: change the types and run make generate; make test
// fails when the checked-in code is stale.
//
// The sub-packages are:
//
//   - clientset/versioned: the typed clientset (NewForConfig), with Apply and
//     ApplyStatus for server-side apply;
//   - clientset/versioned/fake: an in-memory clientset for tests.
//     NewClientset serves server-side apply with the Foo's schema (field
//     managers, conflicts, lists merged by key); wrap it with
//     reconciletest.Strict for resourceVersions, UIDs, generation and the
//     status subresource;
//   - informers/externalversions: the shared informer factory
//     (NewSharedInformerFactory);
//   - listers/samplecontroller/v1alpha1: cache-backed FooLister;
//   - applyconfiguration/samplecontroller/v1alpha1: apply configurations
//     (Foo, FooSpec, FooStatus builders) and ExtractFoo and ExtractFooStatus,
//     which read back what one field manager applied.
//
// A test wires them like a controller would:
//
//	ctx, cancel := context.WithCancel(ctx)
//	client := fake.NewClientset(foo)
//	factory := externalversions.NewSharedInformerFactory(client, 0)
//	lister := factory.Samplecontroller().V1alpha1().Foos().Lister()
//	factory.Start(ctx.Done())
//	defer func() { cancel(); factory.Shutdown() }() // Shutdown waits for the stop
//	factory.WaitForCacheSync(ctx.Done())
//	got, err := lister.Foos("default").Get("example-foo")
package generated
