package informer_test

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

func withManagedFields() deployOpt {
	return func(d *appsv1.Deployment) {
		d.ManagedFields = []metav1.ManagedFieldsEntry{{
			Manager:    "foo-controller",
			Operation:  metav1.ManagedFieldsOperationUpdate,
			APIVersion: "apps/v1",
			FieldsType: "FieldsV1",
			FieldsV1:   &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)},
		}}
	}
}

func TestStripManagedFields(t *testing.T) {
	var nilDep *appsv1.Deployment
	var nilTomb *cache.DeletedFinalStateUnknown
	u := &unstructured.Unstructured{}
	u.SetName("u")
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "m"}})

	tests := []struct {
		name  string
		in    any
		check func(t *testing.T, out any)
	}{
		{
			name: "deployment",
			in:   deployment("ns", "a", withManagedFields()),
			check: func(t *testing.T, out any) {
				d := out.(*appsv1.Deployment)
				assert.Nil(t, d.ManagedFields)
				assert.Equal(t, "a", d.Name)
			},
		},
		{
			name: "without managed fields",
			in:   deployment("ns", "a"),
			check: func(t *testing.T, out any) {
				assert.Equal(t, deployment("ns", "a"), out)
			},
		},
		{
			name: "unstructured",
			in:   u,
			check: func(t *testing.T, out any) {
				assert.Nil(t, out.(*unstructured.Unstructured).GetManagedFields())
			},
		},
		{
			name: "tombstone",
			in:   tombstone("ns/a", deployment("ns", "a", withManagedFields())),
			check: func(t *testing.T, out any) {
				tomb := out.(cache.DeletedFinalStateUnknown)
				assert.Equal(t, "ns/a", tomb.Key)
				assert.Nil(t, tomb.Obj.(*appsv1.Deployment).ManagedFields)
			},
		},
		{
			name: "tombstone pointer",
			in:   &cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: deployment("ns", "a", withManagedFields())},
			check: func(t *testing.T, out any) {
				assert.Nil(t, out.(*cache.DeletedFinalStateUnknown).Obj.(*appsv1.Deployment).ManagedFields)
			},
		},
		{
			name:  "nil tombstone pointer",
			in:    nilTomb,
			check: func(t *testing.T, out any) { assert.Equal(t, nilTomb, out) },
		},
		{
			name:  "tombstone without object",
			in:    tombstone("ns/a", nil),
			check: func(t *testing.T, out any) { assert.Equal(t, tombstone("ns/a", nil), out) },
		},
		{
			name:  "nil",
			in:    nil,
			check: func(t *testing.T, out any) { assert.Nil(t, out) },
		},
		{
			name:  "nil pointer",
			in:    nilDep,
			check: func(t *testing.T, out any) { assert.Equal(t, nilDep, out) },
		},
		{
			name:  "list without object metadata",
			in:    &corev1.PodList{Items: []corev1.Pod{*pod("ns", "p")}},
			check: func(t *testing.T, out any) { assert.Len(t, out.(*corev1.PodList).Items, 1) },
		},
		{
			name:  "not an object",
			in:    "ns/a",
			check: func(t *testing.T, out any) { assert.Equal(t, "ns/a", out) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out any
			var err error
			require.NotPanics(t, func() { out, err = informer.StripManagedFields(tt.in) })
			require.NoError(t, err)
			tt.check(t, out)
			// Idempotent.
			again, err := informer.StripManagedFields(out)
			require.NoError(t, err)
			assert.Equal(t, out, again)
		})
	}
}

// deploymentJSON is a Deployment as a controller creates it, with the two
// managedFields entries such an object typically carries: the creating
// controller's and the status updates of kube-controller-manager.
const deploymentJSON = `{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {
    "name": "example-foo", "namespace": "default",
    "uid": "0b6c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d", "resourceVersion": "123456",
    "generation": 3, "creationTimestamp": "2024-01-01T00:00:00Z",
    "labels": {"app": "nginx", "controller": "example-foo"},
    "annotations": {"deployment.kubernetes.io/revision": "1"},
    "ownerReferences": [{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
      "name": "example-foo", "uid": "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", "controller": true, "blockOwnerDeletion": true}],
    "managedFields": [
      {"manager": "foo-controller", "operation": "Update", "apiVersion": "apps/v1",
       "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:controller": {}},
         "f:ownerReferences": {".": {}, "k:{\"uid\":\"9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a\"}": {}}},
         "f:spec": {"f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
           "f:selector": {}, "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
           "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:controller": {}}},
             "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
               "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
               "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}}}},
      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
       "time": "2024-01-01T00:00:05Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}},
         "f:status": {"f:availableReplicas": {}, "f:conditions": {".": {},
           "k:{\"type\":\"Available\"}": {".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}},
           "k:{\"type\":\"Progressing\"}": {".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}},
           "f:observedGeneration": {}, "f:readyReplicas": {}, "f:replicas": {}, "f:updatedReplicas": {}}}}
    ]
  },
  "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "nginx", "controller": "example-foo"}},
    "template": {"metadata": {"labels": {"app": "nginx", "controller": "example-foo"}},
      "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
    "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
  "status": {"observedGeneration": 3, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
    "conditions": [
      {"type": "Available", "status": "True", "lastUpdateTime": "2024-01-01T00:00:05Z", "lastTransitionTime": "2024-01-01T00:00:05Z",
       "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
      {"type": "Progressing", "status": "True", "lastUpdateTime": "2024-01-01T00:00:05Z", "lastTransitionTime": "2024-01-01T00:00:00Z",
       "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"example-foo-6d4cf56db6\" has successfully progressed."}]}
}`

// BenchmarkStripManagedFields decodes Deployments the way an informer
// receives them, optionally applies StripManagedFields, keeps them all, and
// reports the heap they retain per object.
//
//	go test -run '^$' -bench BenchmarkStripManagedFields ./informer
func BenchmarkStripManagedFields(b *testing.B) {
	raw := []byte(deploymentJSON)
	for _, bc := range []struct {
		name  string
		strip bool
	}{{"keep", false}, {"strip", true}} {
		b.Run(bc.name, func(b *testing.B) {
			kept := make([]*appsv1.Deployment, 0, b.N)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range b.N {
				d := &appsv1.Deployment{}
				if err := json.Unmarshal(raw, d); err != nil {
					b.Fatal(err)
				}
				if bc.strip {
					if _, err := informer.StripManagedFields(d); err != nil {
						b.Fatal(err)
					}
				}
				kept = append(kept, d)
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			retained := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			b.ReportMetric(retained/float64(b.N), "retained-B/object")
			runtime.KeepAlive(kept)
		})
	}
}
