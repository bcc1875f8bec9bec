package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A reconciler of ConfigMaps that reads them from an informer's cache: a
// deleted ConfigMap is done, a read error is retried, a ConfigMap without a
// mode is a terminal error, and the others are looked at again in a minute.
func ExampleFunc() {
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "with-mode"}, Data: map[string]string{"mode": "fast"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "without-mode"}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	lister := factory.Core().V1().ConfigMaps().Lister()
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	r := reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		cm, err := lister.ConfigMaps(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // deleted: nothing to do
		}
		if err != nil {
			return reconcile.Result{}, err // retried with backoff
		}
		if cm.Data["mode"] == "" {
			return reconcile.Result{}, reconcile.Terminal(errors.New("no mode set")) // retrying cannot help
		}
		return reconcile.Result{RequeueAfter: time.Minute}, nil // look again in a minute
	})

	for _, name := range []string{"with-mode", "without-mode", "gone"} {
		res, err := r.Reconcile(context.Background(), cache.ObjectName{Namespace: "ns", Name: name})
		fmt.Printf("%s: requeue after %s, terminal %t, error %v\n", name, res.RequeueAfter, errors.Is(err, &reconcile.TerminalError{}), err)
	}
	// Output:
	// with-mode: requeue after 1m0s, terminal false, error <nil>
	// without-mode: requeue after 0s, terminal true, error terminal error: no mode set
	// gone: requeue after 0s, terminal false, error <nil>
}
