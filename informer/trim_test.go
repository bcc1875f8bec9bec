package informer_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// transformOf captures the transform Trim sets.
type transformOf struct {
	fn  cache.TransformFunc
	err error
}

func (c *transformOf) SetTransform(fn cache.TransformFunc) error {
	c.fn = fn
	return c.err
}

func fullDeployment() *appsv1.Deployment {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: now, DeletionTimestamp: &now, Finalizers: []string{"example.com/keep"},
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "big"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Foo", Name: "example", UID: "uid-foo", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{ServiceAccountName: "web", Containers: []corev1.Container{
				{Name: "nginx", Image: "nginx:1", Args: []string{"-v"}, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
				{Name: "sidecar", Image: "proxy:2", Ports: []corev1.ContainerPort{{ContainerPort: 80}}},
			}}}},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 2, ObservedGeneration: 3, Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable}}},
	}
}

func TestTrimKeepsThePathsAndTheIdentity(t *testing.T) {
	var inf transformOf
	require.NoError(t, informer.Trim[*appsv1.Deployment](&inf, "spec.replicas", "spec.template.spec.containers.image",
		"spec.template.spec.containers.name", "status.availableReplicas", "metadata.labels"))
	full := fullDeployment()
	out, err := inf.fn(full)
	require.NoError(t, err)
	got, ok := out.(*appsv1.Deployment)
	require.True(t, ok)

	want := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: full.CreationTimestamp, DeletionTimestamp: full.DeletionTimestamp, Finalizers: []string{"example.com/keep"},
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{informer.TrimmedAnnotation: "true"},
			OwnerReferences: full.OwnerReferences},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1"}, {Name: "sidecar", Image: "proxy:2"}}}}},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 2},
	}
	assert.Equal(t, want, got)
	assert.True(t, informer.Trimmed(got))
	assert.False(t, informer.Trimmed(full))
	assert.Equal(t, "big", full.Annotations["note"], "the decoded object is not changed")
}

func TestTrimKeepsItsMarkBesideKeptAnnotations(t *testing.T) {
	var inf transformOf
	require.NoError(t, informer.Trim[*appsv1.Deployment](&inf, "metadata.annotations"))
	out, err := inf.fn(fullDeployment())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"note": "big", informer.TrimmedAnnotation: "true"}, out.(*appsv1.Deployment).Annotations)
}

// TestTrimKeepsTheTraceContext: the trace context of the write that made
// an object survives trimming (the reconcile its event sets off links to
// that write), and only on the objects that carry one.
func TestTrimKeepsTheTraceContext(t *testing.T) {
	var inf transformOf
	require.NoError(t, informer.Trim[*appsv1.Deployment](&inf, "spec.replicas"))
	traced := fullDeployment()
	traced.Annotations[tracing.Annotation] = "00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"
	out, err := inf.fn(traced)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{tracing.Annotation: traced.Annotations[tracing.Annotation], informer.TrimmedAnnotation: "true"},
		out.(*appsv1.Deployment).Annotations)

	out, err = inf.fn(fullDeployment())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{informer.TrimmedAnnotation: "true"}, out.(*appsv1.Deployment).Annotations, "no trace context where there was none")
}

func TestTrimOtherObjects(t *testing.T) {
	var inf transformOf
	require.NoError(t, informer.Trim[*appsv1.Deployment](&inf, "spec.replicas"))

	tombstone, err := inf.fn(cache.DeletedFinalStateUnknown{Key: "default/web", Obj: fullDeployment()})
	require.NoError(t, err)
	inner := tombstone.(cache.DeletedFinalStateUnknown).Obj.(*appsv1.Deployment)
	assert.True(t, informer.Trimmed(inner))
	assert.Empty(t, inner.Spec.Template.Spec.Containers)

	ptrTombstone, err := inf.fn(&cache.DeletedFinalStateUnknown{Key: "default/web", Obj: fullDeployment()})
	require.NoError(t, err)
	assert.True(t, informer.Trimmed(ptrTombstone.(*cache.DeletedFinalStateUnknown).Obj.(*appsv1.Deployment)))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	out, err := inf.fn(cm)
	require.NoError(t, err)
	assert.Same(t, cm, out, "objects of another type are stored as they came")
	out, err = inf.fn((*appsv1.Deployment)(nil))
	require.NoError(t, err)
	assert.Nil(t, out)
}

func TestTrimRefusesWhatTheTypeDoesNotHave(t *testing.T) {
	tests := []struct {
		name    string
		trim    func(*transformOf) error
		wantErr string
	}{
		{name: "unknown field", trim: func(c *transformOf) error { return informer.Trim[*appsv1.Deployment](c, "spec.replica") },
			wantErr: `trimming *v1.Deployment to "spec.replica": v1.DeploymentSpec has no field "replica"`},
		{name: "into a map", trim: func(c *transformOf) error { return informer.Trim[*appsv1.Deployment](c, "metadata.labels.app") },
			wantErr: "app is not a field of map[string]string"},
		{name: "into a number", trim: func(c *transformOf) error { return informer.Trim[*appsv1.Deployment](c, "spec.replicas.x") },
			wantErr: "x is not a field of int32"},
		{name: "Go name, not JSON name", trim: func(c *transformOf) error { return informer.Trim[*appsv1.Deployment](c, "Spec.Replicas") },
			wantErr: `has no field "Spec"`},
		{name: "into the items of tolerations", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.replicas", "spec.template.spec.tolerations.key", "spec.template.spec.tolerations.effect")
		}, wantErr: `trimming *v1.Deployment to "spec.template.spec.tolerations.key": spec.template.spec.tolerations is a list that a strategic merge patch replaces whole, ` +
			`so a patch made from a copy that keeps only some fields of its items would erase the others: keep the whole list ("spec.template.spec.tolerations") or none of it`},
		{name: "into the items of readiness gates", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.template.spec.readinessGates.conditionType")
		}, wantErr: "spec.template.spec.readinessGates is a list that a strategic merge patch replaces whole"},
		{name: "into node selector terms", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.matchExpressions")
		}, wantErr: "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms is a list"},
		{name: "into a label selector's expressions", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.selector.matchExpressions.key")
		}, wantErr: "spec.selector.matchExpressions is a list"},
		{name: "into the items of a pod's tolerations", trim: func(c *transformOf) error {
			return informer.Trim[*corev1.Pod](c, "spec.tolerations.operator")
		}, wantErr: "spec.tolerations is a list"},
		{name: "informer started", trim: func(c *transformOf) error {
			c.err = assert.AnError
			return informer.Trim[*appsv1.Deployment](c, "spec.replicas")
		}, wantErr: assert.AnError.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c transformOf
			assert.ErrorContains(t, tt.trim(&c), tt.wantErr)
		})
	}
}

// Lists that a strategic merge patch merges item by item, lists kept
// whole, and the lists of types outside k8s.io/api (custom resources take
// JSON merge patches, which package reconcile/write refuses to change a
// list with) may be trimmed into.
func TestTrimIntoLists(t *testing.T) {
	tests := []struct {
		name string
		trim func(*transformOf) error
	}{
		{name: "merged by name", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.template.spec.containers.name", "spec.template.spec.containers.image")
		}},
		{name: "merged by port, inside a list merged by name", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.template.spec.containers.name", "spec.template.spec.containers.ports.containerPort")
		}},
		{name: "merged by type", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "status.conditions.type", "status.conditions.status")
		}},
		{name: "kept whole", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.template.spec.tolerations", "spec.template.spec.affinity")
		}},
		{name: "kept whole, given before some fields of it", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.template.spec.tolerations", "spec.template.spec.tolerations.key")
		}},
		{name: "kept whole, given after some fields of it", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.template.spec.tolerations.key", "spec.template.spec.tolerations")
		}},
		{name: "kept whole through its parent", trim: func(c *transformOf) error {
			return informer.Trim[*appsv1.Deployment](c, "spec.template.spec.affinity.nodeAffinity", "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.matchExpressions.key")
		}},
		{name: "a type outside k8s.io/api", trim: func(c *transformOf) error {
			return informer.Trim[*bare](c, "spec.items.name")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c transformOf
			require.NoError(t, tt.trim(&c))
			assert.NotNil(t, c.fn)
		})
	}
}

// An informer trimmed through its factory's informer holds trimmed
// objects, and a trimmed object's deletion reaches handlers.
func TestTrimOnAnInformer(t *testing.T) {
	client := fake.NewClientset(fullDeployment())
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Apps().V1().Deployments()
	require.NoError(t, informer.Trim[*appsv1.Deployment](inf.Informer(), "spec.replicas"))
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced))

	d, err := inf.Lister().Deployments("default").Get("web")
	require.NoError(t, err)
	assert.True(t, informer.Trimmed(d))
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	assert.Empty(t, d.Spec.Template.Spec.Containers)
	assert.ErrorContains(t, informer.Trim[*appsv1.Deployment](inf.Informer(), "spec.replicas"), "informer has already started")

	require.NoError(t, client.AppsV1().Deployments("default").Delete(ctx, "web", metav1.DeleteOptions{}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(inf.Informer().GetStore().ListKeys()) == 0, nil
	}))
}

// Trimmed objects of one informer share the kept values they have in
// common (cached objects are never modified), and keep their own values
// where they differ.
func TestTrimStoresEqualValuesOnce(t *testing.T) {
	var inf transformOf
	require.NoError(t, informer.Trim[*appsv1.Deployment](&inf, "spec.replicas", "spec.template.spec.containers.name",
		"spec.template.spec.containers.image", "spec.template.metadata.labels"))
	trim := func(name, image string) *appsv1.Deployment {
		d := fullDeployment()
		// Every string separately allocated, as decoding makes them.
		d.Name, d.Namespace = name, strings.Clone("default")
		d.OwnerReferences[0].APIVersion, d.OwnerReferences[0].Kind = strings.Clone("v1"), strings.Clone("Foo")
		d.Spec.Template.Spec.Containers[0].Image = strings.Clone(image)
		d.Spec.Template.Spec.Containers[1].Name = strings.Clone("sidecar")
		d.Finalizers = []string{strings.Clone("example.com/keep")}
		out, err := inf.fn(d)
		require.NoError(t, err)
		return out.(*appsv1.Deployment)
	}
	a, b, other := trim("a", "nginx:1"), trim("b", "nginx:1"), trim("c", "nginx:2")

	assert.Equal(t, []corev1.Container{{Name: "nginx", Image: "nginx:1"}, {Name: "sidecar", Image: "proxy:2"}}, a.Spec.Template.Spec.Containers)
	assert.Same(t, unsafe.SliceData(a.Spec.Template.Spec.Containers), unsafe.SliceData(b.Spec.Template.Spec.Containers))
	assert.Same(t, a.Spec.Replicas, b.Spec.Replicas)
	assert.Same(t, unsafe.StringData(a.Namespace), unsafe.StringData(b.Namespace))
	assert.Same(t, unsafe.StringData(a.OwnerReferences[0].APIVersion), unsafe.StringData(b.OwnerReferences[0].APIVersion))
	assert.Same(t, unsafe.StringData(a.OwnerReferences[0].Kind), unsafe.StringData(b.OwnerReferences[0].Kind))
	assert.Same(t, unsafe.SliceData(a.Finalizers), unsafe.SliceData(b.Finalizers))
	assert.Equal(t, []string{"example.com/keep"}, b.Finalizers)
	// Their own values stay their own.
	assert.Equal(t, []string{"a", "b"}, []string{a.Name, b.Name})
	assert.NotSame(t, unsafe.SliceData(a.OwnerReferences), unsafe.SliceData(b.OwnerReferences))

	// Another image: another list, whose equal strings are still shared.
	assert.Equal(t, []corev1.Container{{Name: "nginx", Image: "nginx:2"}, {Name: "sidecar", Image: "proxy:2"}}, other.Spec.Template.Spec.Containers)
	assert.NotSame(t, unsafe.SliceData(a.Spec.Template.Spec.Containers), unsafe.SliceData(other.Spec.Template.Spec.Containers))
	assert.Same(t, unsafe.StringData(a.Spec.Template.Spec.Containers[1].Name), unsafe.StringData(other.Spec.Template.Spec.Containers[1].Name))
	// Lists whose strings would read alike run together are told apart.
	ab, bc := fullDeployment(), fullDeployment()
	ab.Spec.Template.Spec.Containers = []corev1.Container{{Name: "ab", Image: "c"}}
	bc.Spec.Template.Spec.Containers = []corev1.Container{{Name: "a", Image: "bc"}}
	for _, d := range []*appsv1.Deployment{ab, bc} {
		out, err := inf.fn(d.DeepCopy())
		require.NoError(t, err)
		assert.Equal(t, d.Spec.Template.Spec.Containers, out.(*appsv1.Deployment).Spec.Template.Spec.Containers)
	}
	// A map is the object's own.
	assert.Equal(t, a.Spec.Template.Labels, other.Spec.Template.Labels)
	a.Spec.Template.Labels["mine"] = "a"
	assert.NotContains(t, other.Spec.Template.Labels, "mine")
}

// bare is an object of a type outside k8s.io/api, with a list that has no
// patch strategy.
type bare struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Items []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"items"`
	} `json:"spec"`
}

// A path into the items of a list merged by key keeps the key too: a patch
// made from the trimmed copy names each item it changes, as a strategic
// merge patch must (an item without its key is refused by the API server,
// and a fake clientset adds it as a new item).
func TestTrimKeepsTheMergeKeyOfAList(t *testing.T) {
	tests := []struct {
		name  string
		paths []string
		want  appsv1.DeploymentSpec
	}{
		{name: "containers by name", paths: []string{"spec.template.spec.containers.image"},
			want: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1"}, {Name: "sidecar", Image: "proxy:2"}}}}}},
		{name: "ports by containerPort, inside containers by name", paths: []string{"spec.template.spec.containers.ports.protocol"},
			want: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "nginx"}, {Name: "sidecar", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}}}},
		{name: "a list kept whole needs nothing more", paths: []string{"spec.template.spec.containers"},
			want: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: fullDeployment().Spec.Template.Spec.Containers}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inf transformOf
			require.NoError(t, informer.Trim[*appsv1.Deployment](&inf, tt.paths...))
			out, err := inf.fn(fullDeployment())
			require.NoError(t, err)
			got, ok := out.(*appsv1.Deployment)
			require.True(t, ok)
			assert.Equal(t, tt.want, got.Spec)
		})
	}
}

// The trim leaves the object it is given as it was, owner references
// included, so that a sharded cache (queue/shard) may read the object it
// passed while the informer trims it.
func TestTrimLeavesItsInputAsItWas(t *testing.T) {
	var inf transformOf
	require.NoError(t, informer.Trim[*appsv1.Deployment](&inf, "spec.replicas"))
	first := fullDeployment()
	_, err := inf.fn(first) // its owner's API version and kind are shared from now on
	require.NoError(t, err)

	second := fullDeployment()
	second.OwnerReferences[0].APIVersion, second.OwnerReferences[0].Kind = strings.Clone("v1"), strings.Clone("Foo")
	apiVersion, kind := unsafe.StringData(second.OwnerReferences[0].APIVersion), unsafe.StringData(second.OwnerReferences[0].Kind)
	before := second.DeepCopy()
	out, err := inf.fn(second)
	require.NoError(t, err)

	assert.Equal(t, before, second)
	assert.Same(t, apiVersion, unsafe.StringData(second.OwnerReferences[0].APIVersion), "the input's owner reference was rewritten")
	assert.Same(t, kind, unsafe.StringData(second.OwnerReferences[0].Kind), "the input's owner reference was rewritten")
	trimmed := out.(*appsv1.Deployment)
	assert.Equal(t, before.OwnerReferences, trimmed.OwnerReferences)
	assert.NotSame(t, unsafe.SliceData(second.OwnerReferences), unsafe.SliceData(trimmed.OwnerReferences))
}
