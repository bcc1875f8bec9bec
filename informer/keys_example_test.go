package informer_test

import (
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A controller checks every ConfigMap in its cache each minute, and the
// ConfigMaps an external system names in its change notifications.
func ExampleAllKeys() {
	configMaps := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().ConfigMaps()
	ctrl, err := queue.New("checks", reconcile.Func[cache.ObjectName](nil))
	if err != nil {
		panic(err)
	}
	fmt.Println(checkEveryMinute(ctrl, configMaps), followChanges(ctrl, make(chan []string)))
	// Output: <nil> <nil>
}

func checkEveryMinute(ctrl *queue.Controller[cache.ObjectName], configMaps coreinformers.TypedConfigMapInformer) error {
	err := ctrl.Watch(queue.Periodic(ctrl, time.Minute, informer.AllKeys(configMaps.TypedInformer()), queue.LowPriority()))
	return err
}

func followChanges(ctrl *queue.Controller[cache.ObjectName], changes <-chan []string) error {
	err := ctrl.Watch(queue.Channel(ctrl, changes, informer.NamesIn(""))) // changes: a <-chan []string of names
	return err
}
