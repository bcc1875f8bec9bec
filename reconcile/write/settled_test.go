package write

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// The objects remembered as settled (their last update changed nothing
// the controller owns) are swept once the cache shows them changed or
// gone, as the other per-object entries are: the memory is bounded by the
// objects that stay settled, and Forget drops an entry at once.
func TestSettledObjectsAreSwept(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().ConfigMaps().TypedInformer()
	o := New(inf)
	const n = 4 * minSweep
	for i := range n {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(i), UID: types.UID(fmt.Sprint(i)), ResourceVersion: "10"}}
		if i%2 == 0 {
			// The cache shows the even ones as settled; the odd ones are gone.
			require.NoError(t, inf.GetIndexer().Add(obj))
		}
		o.settle(cache.MetaObjectToName(obj), obj)
	}
	o.mu.Lock()
	gone := 0
	for name := range o.settled {
		_, found, err := inf.GetIndexer().GetByKey(name.String())
		require.NoError(t, err)
		if !found {
			gone++
		}
	}
	assert.Equal(t, n/2, len(o.settled)-gone, "every object still settled is kept")
	assert.Less(t, gone, n/2, "the entries of objects gone were swept")
	o.mu.Unlock()
	o.Forget(cache.ObjectName{Namespace: "ns", Name: "0"})
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.NotContains(t, o.settled, cache.ObjectName{Namespace: "ns", Name: "0"})
}
