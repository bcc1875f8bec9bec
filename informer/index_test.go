package informer_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// deploymentInformer is the typed informer of Deployments.
type deploymentInformer = cache.TypedSharedIndexInformer[*appsv1.Deployment]

// byApp files a Deployment under its "app" label.
func byApp(d *appsv1.Deployment) []string { return []string{d.Labels["app"]} }

// byTier files a Deployment under its "tier" label.
func byTier(d *appsv1.Deployment) []string { return []string{d.Labels["tier"]} }

// byLabel returns a function that files a Deployment under the label key.
func byLabel(key string) func(*appsv1.Deployment) []string {
	return func(d *appsv1.Deployment) []string { return []string{d.Labels[key]} }
}

// A second NewIndex of a name returns the index only when it files by the
// same function; any other function is an error, and the index keeps
// filing by the first one.
func TestNewIndexOfTheSameName(t *testing.T) {
	app := byLabel("app")
	keyOf := informer.KeyOf[*appsv1.Deployment]
	// second registers the second index of name "index" with values.
	second := func(values func(*appsv1.Deployment) []string) func(deploymentInformer) error {
		return func(inf deploymentInformer) error {
			_, err := informer.NewIndex(inf, "index", values)
			return err
		}
	}
	tests := []struct {
		name  string
		first func(*appsv1.Deployment) []string
		// second registers a second index of the name "index".
		second  func(inf deploymentInformer) error
		wantErr bool
		// value is what the first function files the Deployment under.
		value string
	}{
		{name: "same function", first: byApp, second: second(byApp), value: "shop"},
		{name: "same generic instantiation", first: keyOf, second: second(informer.KeyOf[*appsv1.Deployment]), value: "ns/web"},
		{name: "same closure", first: app, second: second(app), value: "shop"},
		{name: "another function", first: byApp, second: second(byTier), wantErr: true, value: "shop"},
		{name: "a closure capturing another value", first: app, second: second(byLabel("tier")), wantErr: true, value: "shop"},
		{name: "an equal closure made again", first: app, second: second(byLabel("app")), wantErr: true, value: "shop"},
		// The same informer, seen as one of another type.
		{name: "another type", first: keyOf, wantErr: true, value: "ns/web", second: func(inf deploymentInformer) error {
			other := cache.NewTypedSharedIndexInformer[*metav1.PartialObjectMetadata](inf)
			_, err := informer.NewIndex(other, "index", informer.KeyOf[*metav1.PartialObjectMetadata])
			return err
		}},
		{name: "an index not made by NewIndex", first: byApp, wantErr: true, value: "shop", second: func(inf deploymentInformer) error {
			require.NoError(t, inf.AddIndexers(cache.Indexers{"foreign": func(obj any) ([]string, error) {
				return []string{obj.(*appsv1.Deployment).Name}, nil // expects its own type only
			}}))
			_, err := informer.NewIndex(inf, "foreign", byApp)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inf := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Apps().V1().Deployments().TypedInformer()
			first, err := informer.NewIndex(inf, "index", tt.first)
			require.NoError(t, err)
			err = tt.second(inf)
			if tt.wantErr {
				require.ErrorIs(t, err, informer.ErrIndexConflict)
			} else {
				require.NoError(t, err)
			}

			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Labels: map[string]string{"app": "shop", "tier": "front"}}}
			require.NoError(t, inf.GetIndexer().Add(d))
			keys, err := first.Keys(tt.value)
			require.NoError(t, err)
			assert.Equal(t, []cache.ObjectName{{Namespace: "ns", Name: "web"}}, keys, "the index files by its first function")
		})
	}
}

// byTeams files a Deployment under each of its teams, none or several.
func byTeams(d *appsv1.Deployment) []string {
	if d.Labels["teams"] == "" {
		return nil
	}
	return strings.Split(d.Labels["teams"], ".")
}

// An index with buckets answers exactly as one without: objects that share
// a bucket but not the value are left out, through adds, updates and
// deletes, and objects filed under several values are found by each.
func TestIndexWithBuckets(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []informer.IndexOption
	}{
		{name: "no buckets"},
		{name: "one bucket", opts: []informer.IndexOption{informer.WithBuckets(1)}},
		{name: "seven buckets", opts: []informer.IndexOption{informer.WithBuckets(7)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inf := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Apps().V1().Deployments().TypedInformer()
			idx, err := informer.NewIndex(inf, "teams", byTeams, tt.opts...)
			require.NoError(t, err)
			store := inf.GetIndexer()
			want := map[string][]string{} // team -> Deployment names
			deployment := func(i int, teams ...string) *appsv1.Deployment {
				return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("d%d", i),
					Labels: map[string]string{"teams": strings.Join(teams, ".")}}}
			}
			check := func() {
				t.Helper()
				for i := range 12 {
					team := fmt.Sprintf("t%d", i)
					objs, err := idx.List(team)
					require.NoError(t, err)
					var names []string
					for _, d := range objs {
						names = append(names, d.Name)
					}
					assert.ElementsMatch(t, want[team], names, "List(%s)", team)
					keys, err := idx.Keys(team)
					require.NoError(t, err)
					names = nil
					for _, k := range keys {
						assert.Equal(t, "ns", k.Namespace)
						names = append(names, k.Name)
					}
					assert.ElementsMatch(t, want[team], names, "Keys(%s)", team)
				}
			}
			for i := range 40 {
				teams := []string{fmt.Sprintf("t%d", i%10)}
				if i%4 == 0 {
					teams = append(teams, fmt.Sprintf("t%d", (i+3)%10))
				}
				require.NoError(t, store.Add(deployment(i, teams...)))
				for _, team := range teams {
					want[team] = append(want[team], fmt.Sprintf("d%d", i))
				}
			}
			require.NoError(t, store.Add(deployment(40))) // filed under nothing
			check()
			// d1 moves from t1 to t11; d2 is deleted.
			require.NoError(t, store.Update(deployment(1, "t11")))
			want["t1"] = slices.DeleteFunc(want["t1"], func(n string) bool { return n == "d1" })
			want["t11"] = []string{"d1"}
			require.NoError(t, store.Delete(deployment(2)))
			want["t2"] = slices.DeleteFunc(want["t2"], func(n string) bool { return n == "d2" })
			check()
		})
	}
}

// Buckets are part of what an index files by: the same function with
// other buckets is another index.
func TestIndexBucketsMustMatch(t *testing.T) {
	inf := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Apps().V1().Deployments().TypedInformer()
	_, err := informer.NewIndex(inf, "teams", byTeams, informer.WithBuckets(8))
	require.NoError(t, err)
	again, err := informer.NewIndex(inf, "teams", byTeams, informer.WithBuckets(8))
	require.NoError(t, err)
	// The second Index finds what the first one's function filed.
	for i := range 20 {
		require.NoError(t, inf.GetIndexer().Add(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("d%d", i),
			Labels: map[string]string{"teams": fmt.Sprintf("t%d", i)}}}))
	}
	for i := range 20 {
		keys, err := again.Keys(fmt.Sprintf("t%d", i))
		require.NoError(t, err)
		assert.Equal(t, []cache.ObjectName{{Namespace: "ns", Name: fmt.Sprintf("d%d", i)}}, keys)
	}
	_, err = informer.NewIndex(inf, "teams", byTeams, informer.WithBuckets(16))
	assert.ErrorIs(t, err, informer.ErrIndexConflict)
	_, err = informer.NewIndex(inf, "teams", byTeams)
	assert.ErrorIs(t, err, informer.ErrIndexConflict)
	_, err = informer.NewIndex(inf, "other", byTeams, informer.WithBuckets(0))
	assert.ErrorContains(t, err, "0 buckets: want at least 1")
}
