package multicluster

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/informer"
)

// The informers of a new attempt start with the objects of the informer
// of the same type of the previous attempt's factory that lists the same
// (same type, namespace and list options), wherever it stood; seeding
// makes no informer the new factory did not have, and leaves alone
// factories with no twin or more than one.
func TestSeedInformers(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}})
	old := informers.NewSharedInformerFactory(client, 0)
	oldCMs := old.Core().V1().ConfigMaps().Informer()
	old.Core().V1().Secrets().Informer()
	stop := make(chan struct{})
	old.Start(stop)
	for typ, ok := range old.WaitForCacheSync(stop) {
		require.True(t, ok, "%s synced", typ)
	}
	close(stop)
	old.Shutdown()
	require.Len(t, oldCMs.GetStore().ListKeys(), 1)

	next := informers.NewSharedInformerFactory(client, 0)
	cms := next.Core().V1().ConfigMaps().Informer()
	assert.Equal(t, 1, seedInformers([]informer.Factory{old}, []informer.Factory{next}))
	assert.Equal(t, []string{"app/settings"}, cms.GetStore().ListKeys())
	assert.Nil(t, informerFor(next, reflect.TypeFor[*corev1.Secret]()), "the new factory has no Secrets informer")
	closed := make(chan struct{})
	close(closed)
	next.Start(closed)
	next.Shutdown()
	assert.Len(t, next.WaitForCacheSync(closed), 1, "seeding made no informer")

	moved := informers.NewSharedInformerFactory(client, 0)
	moved.Core().V1().ConfigMaps().Informer()
	assert.Equal(t, 1, seedInformers([]informer.Factory{nil, old}, []informer.Factory{moved}), "the twin at another place")
	inNamespace := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("app"))
	inNamespace.Core().V1().ConfigMaps().Informer()
	assert.Zero(t, seedInformers([]informer.Factory{old}, []informer.Factory{inNamespace}), "a factory of another namespace")
	second := informers.NewSharedInformerFactory(client, 0)
	second.Core().V1().ConfigMaps().Informer()
	third := informers.NewSharedInformerFactory(client, 0)
	third.Core().V1().ConfigMaps().Informer()
	assert.Zero(t, seedInformers([]informer.Factory{old}, []informer.Factory{second, third}), "two factories that list the same")
	assert.Zero(t, seedInformers([]informer.Factory{old}, []informer.Factory{old}), "the same factory")
}
