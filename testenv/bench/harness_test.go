package bench

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
)

func TestPeersReconcileEveryKeyOfEveryRound(t *testing.T) {
	const n = 500
	keys := newKeyTable(keyNames("foo", n))
	for _, kind := range loopPeers {
		for _, workers := range []int{1, 3} {
			t.Run(kind.name, func(t *testing.T) {
				rec := newRoundCounter(n)
				p := kind.new(t, keys, workers, rec.reconcile)
				stop := p.start(t.Context(), t)
				defer stop()
				for round := 1; round <= 2; round++ {
					for i := range n {
						p.add(i)
					}
					select {
					case <-rec.round:
					case <-time.After(time.Minute):
						require.FailNowf(t, "round not finished", "round %d: %d keys reconciled", round, rec.seen.Load())
					}
					assert.EqualValues(t, round*n, rec.seen.Load())
				}
			})
		}
	}
}

func TestStormKeys(t *testing.T) {
	tests := []struct {
		name     string
		cfg      stormConfig
		wantKeys int
	}{
		{"benchmark", benchStorm, 20_050},
		{"small", stormConfig{initial: 100, fresh: 10}, 105},
		{"odd fresh count", stormConfig{initial: 100, fresh: 7}, 104},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, targets := stormKeys(tt.cfg)
			require.Len(t, keys.names, tt.wantKeys)
			require.Len(t, targets, tt.cfg.fresh)
			seen := map[int]bool{}
			for j, target := range targets {
				assert.False(t, seen[target], "fresh change %d touches key %d twice", j, target)
				seen[target] = true
				if j%2 == 0 {
					assert.GreaterOrEqual(t, target, tt.cfg.initial/2, "fresh change %d must touch the second half of the list", j)
					assert.Less(t, target, tt.cfg.initial, "fresh change %d must touch an initial key", j)
				} else {
					assert.GreaterOrEqual(t, target, tt.cfg.initial, "fresh change %d must touch a new key", j)
				}
			}
		})
	}
}

func TestStormPicksUpEveryFreshChange(t *testing.T) {
	cfg := stormConfig{initial: 2000, fresh: 10, delay: time.Millisecond, interval: 200 * time.Microsecond, cost: 20 * time.Microsecond, workers: 2}
	keys, targets := stormKeys(cfg)
	for _, kind := range stormPeers {
		t.Run(kind.name, func(t *testing.T) {
			r := runStorm(t, kind, cfg, keys, targets, time.Minute)
			require.Len(t, r.latencies, cfg.fresh)
			for j, l := range r.latencies {
				assert.Positive(t, l, "latency of fresh change %d", j)
			}
			assert.Positive(t, r.drain)
		})
	}
}

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"single", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd count", ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{"nearest rank rounds up", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(func() []int {
			v := make([]int, 100)
			for i := range v {
				v[i] = 100 - i
			}
			return v
		}()...), 0.99, 99 * time.Millisecond},
		{"max", ms(5, 9, 1), 1, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.in...)
			assert.Equal(t, tt.want, percentile(tt.in, tt.p))
			assert.Equal(t, in, tt.in, "input must not be reordered")
		})
	}
}

func TestBenchObjectsCarryRealisticManagedFields(t *testing.T) {
	tests := []struct {
		name     string
		obj      metav1.Object
		managers []string
	}{
		{"foo", benchFoo(3, true), []string{"kubectl-create", "foo-controller"}},
		{"deployment", benchDeployment(3, true), []string{"foo-controller", "kube-controller-manager", "kube-controller-manager"}},
		{"foo without", benchFoo(3, false), nil},
		{"deployment without", benchDeployment(3, false), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var managers []string
			for _, e := range tt.obj.GetManagedFields() {
				managers = append(managers, e.Manager)
				require.NotNil(t, e.FieldsV1)
				assert.True(t, json.Valid(e.FieldsV1.Raw), "FieldsV1 of %s is not JSON: %s", e.Manager, e.FieldsV1.Raw)
				assert.Equal(t, "FieldsV1", e.FieldsType)
			}
			assert.Equal(t, tt.managers, managers)
			stripped, err := informer.StripManagedFields(tt.obj)
			require.NoError(t, err)
			assert.Empty(t, stripped.(metav1.Object).GetManagedFields())
		})
	}
}

func TestMeasureInformerMemorySyncsEveryObject(t *testing.T) {
	const n = 50
	tests := []struct {
		name          string
		transform     cache.TransformFunc
		wantManagedFn func(t *testing.T, fields []metav1.ManagedFieldsEntry)
	}{
		{"no transform keeps managedFields", nil, func(t *testing.T, f []metav1.ManagedFieldsEntry) { assert.NotEmpty(t, f) }},
		{"strip removes them", informer.StripManagedFields, func(t *testing.T, f []metav1.ManagedFieldsEntry) { assert.Empty(t, f) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checked := false
			measureInformerMemory(t, n, tt.transform, func(foos, deployments cache.Store) {
				checked = true
				ns, name := fooName(7)
				obj, ok, err := foos.GetByKey(ns + "/" + name)
				require.NoError(t, err)
				require.True(t, ok)
				foo := obj.(*v1alpha1.Foo)
				assert.Equal(t, benchFoo(7, true).Spec, foo.Spec, "the decoded Foo must match what was stored")
				tt.wantManagedFn(t, foo.ManagedFields)

				obj, ok, err = deployments.GetByKey(ns + "/" + name + "-app")
				require.NoError(t, err)
				require.True(t, ok)
				d := obj.(*appsv1.Deployment)
				assert.Equal(t, benchDeployment(7, true).Spec, d.Spec, "the decoded Deployment must match what was stored")
				tt.wantManagedFn(t, d.ManagedFields)
			})
			assert.True(t, checked)
		})
	}
}
