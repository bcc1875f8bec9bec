// Package generated holds the Go clients of the Foo API
// (github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1), produced
// by k8s.io/code-generator. Its sub-packages are never edited by hand:
// change the types and run foo/hack/update-codegen.sh; foo/hack/verify-codegen.sh
// fails when the checked-in code is stale.
//
// The sub-packages are:
//
//   - clientset/versioned: the typed clientset (NewForConfig), with Apply and
//     ApplyStatus for server-side apply;
//   - clientset/versioned/fake: an in-memory clientset for tests. Use
//     NewSimpleClientset: NewClientset's field-managed tracker needs an
//     OpenAPI schema of Foo, which the apply configurations do not embed, so
//     it rejects every Foo write;
//   - informers/externalversions: the shared informer factory
//     (NewSharedInformerFactory);
//   - listers/samplecontroller/v1alpha1: cache-backed FooLister;
//   - applyconfiguration/samplecontroller/v1alpha1: apply configurations
//     (Foo, FooSpec, FooStatus builders). Without an OpenAPI schema there are
//     no ExtractFoo functions.
//
// A test wires them like a controller would:
//
//	ctx, cancel := context.WithCancel(ctx)
//	client := fake.NewSimpleClientset(foo)
//	factory := externalversions.NewSharedInformerFactory(client, 0)
//	lister := factory.Samplecontroller().V1alpha1().Foos().Lister()
//	factory.Start(ctx.Done())
//	defer func() { cancel(); factory.Shutdown() }() // Shutdown waits for the stop
//	factory.WaitForCacheSync(ctx.Done())
//	got, err := lister.Foos("default").Get("example-foo")
package generated
