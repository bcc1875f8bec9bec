package informer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/informer"
)

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	require.NoError(t, err)
	return sel
}

// verdict is what a predicate says about the three event kinds.
type verdict struct{ Add, Update, Delete bool }

func judge(p informer.Predicate, oldObj, newObj metav1.Object) verdict {
	return verdict{Add: p.Add(newObj), Update: p.Update(oldObj, newObj), Delete: p.Delete(newObj)}
}

func TestPredicates(t *testing.T) {
	web := deployment("ns", "a", withLabels("app", "web"), withGeneration(1), withRV("1"))
	webGen2 := deployment("ns", "a", withLabels("app", "web"), withGeneration(2), withRV("2"))
	db := deployment("ns", "a", withLabels("app", "db"), withGeneration(1), withRV("3"))
	dbGen2 := deployment("ns", "a", withLabels("app", "db"), withGeneration(2), withRV("4"))
	noRV := deployment("ns", "a")
	isWeb := informer.LabelSelector(mustSelector(t, "app=web"))
	isDB := informer.LabelSelector(mustSelector(t, "app=db"))
	named := func(name string) informer.ObjectPredicate {
		return informer.ObjectFunc(func(d *appsv1.Deployment) bool { return d.Name == name })
	}

	tests := []struct {
		name     string
		p        informer.Predicate
		old, new metav1.Object
		want     verdict
	}{
		{name: "selector matches both", p: isWeb, old: web, new: webGen2, want: verdict{true, true, true}},
		{name: "selector matches old only", p: isWeb, old: web, new: db, want: verdict{false, true, false}},
		{name: "selector matches new only", p: isWeb, old: db, new: web, want: verdict{true, true, true}},
		{name: "selector matches neither", p: isWeb, old: db, new: dbGen2, want: verdict{false, false, false}},
		{name: "nil selector matches nothing", p: informer.LabelSelector(nil), old: web, new: web, want: verdict{}},
		{name: "everything", p: informer.LabelSelector(labels.Everything()), old: noRV, new: noRV, want: verdict{true, true, true}},

		{name: "object func on T", p: named("a"), old: web, new: web, want: verdict{true, true, true}},
		{name: "object func rejects other types", p: named("p"), old: pod("ns", "p"), new: pod("ns", "p"), want: verdict{}},

		{name: "label present on both", p: informer.LabelPresent("app"), old: web, new: db, want: verdict{true, true, true}},
		{name: "label removed", p: informer.LabelPresent("app"), old: web, new: noRV, want: verdict{false, true, false}},
		{name: "label added", p: informer.LabelPresent("app"), old: noRV, new: web, want: verdict{true, true, true}},
		{name: "label absent", p: informer.LabelPresent("team"), old: web, new: db, want: verdict{}},

		{name: "label value changed", p: informer.LabelChanged("app"), old: web, new: db, want: verdict{true, true, true}},
		{name: "label value same", p: informer.LabelChanged("app"), old: web, new: webGen2, want: verdict{true, false, true}},
		{name: "label dropped", p: informer.LabelChanged("app"), old: web, new: noRV, want: verdict{true, true, true}},
		{name: "label set", p: informer.LabelChanged("app"), old: noRV, new: web, want: verdict{true, true, true}},
		{name: "label set empty", p: informer.LabelChanged("app"), old: noRV, new: deployment("ns", "a", withLabels("app", "")), want: verdict{true, true, true}},
		{name: "other label changed", p: informer.LabelChanged("team"), old: web, new: db, want: verdict{true, false, true}},

		{name: "generation changed", p: informer.GenerationChanged(), old: web, new: webGen2, want: verdict{true, true, true}},
		{name: "generation same", p: informer.GenerationChanged(), old: web, new: db, want: verdict{true, false, true}},

		{name: "resource version changed", p: informer.ResourceVersionChanged(), old: web, new: webGen2, want: verdict{true, true, true}},
		{name: "resource version same", p: informer.ResourceVersionChanged(), old: web, new: web, want: verdict{true, false, true}},
		{name: "resource version empty", p: informer.ResourceVersionChanged(), old: noRV, new: noRV, want: verdict{true, true, true}},

		{name: "typed update func", p: informer.UpdateFunc(func(o, n *appsv1.Deployment) bool { return o.Labels["app"] != n.Labels["app"] }),
			old: web, new: db, want: verdict{true, true, true}},
		{name: "typed update func false", p: informer.UpdateFunc(func(o, n *appsv1.Deployment) bool { return false }),
			old: web, new: db, want: verdict{true, false, true}},
		{name: "typed update func wrong old type", p: informer.UpdateFunc(func(o, n *appsv1.Deployment) bool { return true }),
			old: pod("ns", "a"), new: db, want: verdict{true, false, true}},
		{name: "typed update func wrong new type", p: informer.UpdateFunc(func(o, n *appsv1.Deployment) bool { return true }),
			old: db, new: pod("ns", "a"), want: verdict{true, false, true}},

		{name: "zero funcs pass everything", p: informer.PredicateFuncs{}, old: web, new: db, want: verdict{true, true, true}},

		{name: "and of nothing", p: informer.And(), old: web, new: db, want: verdict{true, true, true}},
		{name: "or of nothing", p: informer.Or(), old: web, new: db, want: verdict{}},
		{name: "not nil", p: informer.Not(nil), old: web, new: db, want: verdict{}},
		{name: "not nil object predicate", p: informer.Not(informer.ObjectPredicate(nil)), old: web, new: db, want: verdict{}},
		{name: "and ignores nils", p: informer.And(nil, informer.ObjectPredicate(nil), isWeb), old: db, new: web, want: verdict{true, true, true}},

		// Object predicates combine per object, then apply the update rule.
		{name: "and of objects: never both", p: informer.And(isWeb, isDB), old: web, new: db, want: verdict{}},
		{name: "or of objects", p: informer.Or(isWeb, isDB), old: web, new: db, want: verdict{true, true, true}},
		{name: "or of objects none", p: informer.Or(isWeb, named("x")), old: db, new: dbGen2, want: verdict{}},
		{name: "not of object leaving", p: informer.Not(isWeb), old: web, new: db, want: verdict{true, true, true}},
		{name: "not of object entering", p: informer.Not(isWeb), old: db, new: web, want: verdict{false, true, false}},
		{name: "not of object inside", p: informer.Not(isWeb), old: web, new: webGen2, want: verdict{false, false, false}},
		{name: "and of objects is object predicate", p: informer.Not(informer.And(isWeb, named("a"))), old: db, new: web,
			want: verdict{false, true, false}},

		// Event predicates combine per event.
		{name: "and mixed", p: informer.And(isWeb, informer.GenerationChanged()), old: web, new: webGen2, want: verdict{true, true, true}},
		{name: "and mixed status only", p: informer.And(isWeb, informer.GenerationChanged()), old: web, new: web, want: verdict{true, false, true}},
		{name: "and mixed outside", p: informer.And(isWeb, informer.GenerationChanged()), old: db, new: dbGen2, want: verdict{false, false, false}},
		{name: "or mixed", p: informer.Or(isWeb, informer.GenerationChanged()), old: db, new: dbGen2, want: verdict{true, true, true}},
		{name: "or mixed none", p: informer.Or(isWeb, informer.Not(informer.PredicateFuncs{})), old: db, new: db, want: verdict{}},
		{name: "or mixed add only", p: informer.Or(isWeb, informer.PredicateFuncs{
			UpdateFunc: func(o, n metav1.Object) bool { return false },
			DeleteFunc: func(o metav1.Object) bool { return false },
		}), old: db, new: db, want: verdict{true, false, false}},
		{name: "not of event predicate", p: informer.Not(informer.GenerationChanged()), old: web, new: webGen2, want: verdict{false, false, false}},
		{name: "not of event predicate unchanged", p: informer.Not(informer.GenerationChanged()), old: web, new: db, want: verdict{false, true, false}},
		{name: "and mixed delete rejected", p: informer.And(informer.PredicateFuncs{DeleteFunc: func(metav1.Object) bool { return false }}, isWeb),
			old: web, new: web, want: verdict{true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, judge(tt.p, tt.old, tt.new))
		})
	}
}

func TestCombinatorsKeepObjectKind(t *testing.T) {
	isWeb := informer.LabelSelector(labels.Everything())
	for name, p := range map[string]informer.Predicate{
		"and": informer.And(isWeb, isWeb),
		"or":  informer.Or(isWeb),
		"not": informer.Not(isWeb),
	} {
		t.Run(name, func(t *testing.T) {
			assert.IsType(t, informer.ObjectPredicate(nil), p)
		})
	}
	assert.IsType(t, informer.PredicateFuncs{}, informer.And(isWeb, informer.GenerationChanged()))
}
