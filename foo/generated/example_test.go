package generated_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
)

// A fake clientset feeds a shared informer factory like a real one would.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())

	client := fake.NewClientset(&samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "example-foo"},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: "example-foo"},
	})
	factory := externalversions.NewSharedInformerFactory(client, 0)
	lister := factory.Samplecontroller().V1alpha1().Foos().Lister()
	factory.Start(ctx.Done())
	// Stop the informers before waiting for them to return.
	defer func() { cancel(); factory.Shutdown() }()
	factory.WaitForCacheSync(ctx.Done())

	foo, err := lister.Foos("default").Get("example-foo")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(foo.Spec.DeploymentName)
	// Output: example-foo
}
