package queue_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A controller over namespace/name keys. Informer event handlers would call
// ctrl.Add; here a channel source plays their part.
func ExampleController() {
	keys := make(chan cache.ObjectName)
	done := make(chan struct{})
	r := reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		fmt.Println("reconciling", key)
		if key.Name == "last" {
			close(done)
		}
		return reconcile.Result{}, nil
	})
	ctrl, err := queue.New("example", r, queue.Options[cache.ObjectName]{
		Workers: 1,
		Sources: []queue.Source[cache.ObjectName]{queue.Channel(keys)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- ctrl.Run(ctx) }()

	keys <- cache.ObjectName{Namespace: "default", Name: "first"}
	keys <- cache.ObjectName{Namespace: "default", Name: "last"}
	<-done
	cancel()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// reconciling default/first
	// reconciling default/last
	// stopped: <nil>
}
