package informer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

func TestAllKeys(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().ConfigMaps().TypedInformer()
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", Labels: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "y"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z", Labels: map[string]string{"app": "web"}}},
	} {
		require.NoError(t, inf.GetIndexer().Add(cm))
	}
	tests := []struct {
		name  string
		preds []informer.Predicate
		want  []cache.ObjectName
	}{
		{name: "every object", want: []cache.ObjectName{{Namespace: "a", Name: "x"}, {Namespace: "b", Name: "y"}, {Namespace: "a", Name: "z"}}},
		{name: "those a predicate keeps", preds: []informer.Predicate{informer.LabelSelector(labels.SelectorFromSet(labels.Set{"app": "web"}))},
			want: []cache.ObjectName{{Namespace: "a", Name: "x"}, {Namespace: "a", Name: "z"}}},
		{name: "those every predicate keeps", preds: []informer.Predicate{
			informer.LabelSelector(labels.SelectorFromSet(labels.Set{"app": "web"})),
			informer.ObjectFunc(func(cm *corev1.ConfigMap) bool { return cm.Name != "x" }),
		}, want: []cache.ObjectName{{Namespace: "a", Name: "z"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := informer.AllKeys(inf, tt.preds...)(context.Background())
			require.NoError(t, err)
			assert.ElementsMatch(t, tt.want, keys)
		})
	}
}

func TestNamesIn(t *testing.T) {
	assert.Equal(t, []cache.ObjectName{{Name: "a"}, {Name: "b"}}, informer.NamesIn("")([]string{"a", "b"}))
	assert.Equal(t, []cache.ObjectName{{Namespace: "ns", Name: "a"}}, informer.NamesIn("ns")([]string{"a"}))
	assert.Empty(t, informer.NamesIn("ns")(nil))
}
