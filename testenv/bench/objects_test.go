package bench

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

// The objects below look like what an API server returns for a Foo created
// with kubectl and the Deployment the foo controller made for it, once the
// Deployment is available: server-filled defaults, an owner reference,
// status with conditions, and the managedFields entries the API server
// records for each writer (kubectl, the foo controller, and
// kube-controller-manager for the revision annotation and the status).

// objectSpread is the number of namespaces the objects are spread over.
const objectSpread = 10

var benchTime = metav1.NewTime(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))

// fields returns a FieldsV1 with the given JSON, in its own allocation as
// a decoder would produce it.
func fields(format string, args ...any) *metav1.FieldsV1 {
	return &metav1.FieldsV1{Raw: []byte(fmt.Sprintf(format, args...))}
}

func fooName(i int) (namespace, name string) {
	return fmt.Sprintf("team-%02d", i%objectSpread), fmt.Sprintf("foo-%05d", i)
}

func fooUID(i int) types.UID {
	return types.UID(fmt.Sprintf("6f1c2a%02x-0b7e-4d5c-9a3e-%012d", i%256, i))
}

// benchFoo returns the i-th Foo, ready and with managedFields when
// withManagedFields is set.
func benchFoo(i int, withManagedFields bool) *v1alpha1.Foo {
	ns, name := fooName(i)
	foo := &v1alpha1.Foo{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Foo"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               fooUID(i),
			ResourceVersion:   fmt.Sprint(100000 + 2*i),
			Generation:        1,
			CreationTimestamp: benchTime,
			Labels:            map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "bench"},
		},
		Spec: v1alpha1.FooSpec{DeploymentName: name + "-app", Replicas: ptr.To[int32](1)},
		Status: v1alpha1.FooStatus{
			AvailableReplicas:  1,
			ObservedGeneration: 1,
			Conditions: []metav1.Condition{{
				Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1,
				LastTransitionTime: benchTime, Reason: v1alpha1.ReasonDeploymentReady,
				Message: fmt.Sprintf("Deployment %s has 1 of 1 replicas available", name+"-app"),
			}},
		},
	}
	if withManagedFields {
		foo.ManagedFields = []metav1.ManagedFieldsEntry{
			{
				Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "samplecontroller.k8s.io/v1alpha1", Time: &benchTime, FieldsType: "FieldsV1",
				FieldsV1: fields(`{"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{}}},"f:spec":{".":{},"f:deploymentName":{},"f:replicas":{}}}`),
			},
			{
				Manager: "foo-controller", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "samplecontroller.k8s.io/v1alpha1", Time: &benchTime, FieldsType: "FieldsV1",
				FieldsV1:    fields(`{"f:status":{".":{},"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{}}}`),
				Subresource: "status",
			},
		}
	}
	return foo
}

// benchDeployment returns the Deployment of the i-th Foo.
func benchDeployment(i int, withManagedFields bool) *appsv1.Deployment {
	ns, fooN := fooName(i)
	name := fooN + "-app"
	labels := map[string]string{"app": "nginx", "controller": fooN}
	rollingUpdate := intstr.FromString("25%")
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID(fmt.Sprintf("0d9e4b%02x-51c3-4e8a-b7d2-%012d", i%256, i)),
			ResourceVersion:   fmt.Sprint(100001 + 2*i),
			Generation:        1,
			CreationTimestamp: benchTime,
			Annotations:       map[string]string{"deployment.kubernetes.io/revision": "1"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Foo", Name: fooN, UID: fooUID(i),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "nginx", Image: "nginx:latest", ImagePullPolicy: corev1.PullAlways,
						TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					}},
					RestartPolicy:                 corev1.RestartPolicyAlways,
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					DNSPolicy:                     corev1.DNSClusterFirst,
					SecurityContext:               &corev1.PodSecurityContext{},
					SchedulerName:                 "default-scheduler",
				},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &rollingUpdate, MaxSurge: &rollingUpdate},
			},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				{
					Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
					LastUpdateTime: benchTime, LastTransitionTime: benchTime,
					Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.",
				},
				{
					Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
					LastUpdateTime: benchTime, LastTransitionTime: benchTime,
					Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", name+"-5d8f7c9b6d"),
				},
			},
		},
	}
	if withManagedFields {
		d.ManagedFields = []metav1.ManagedFieldsEntry{
			{
				Manager: "foo-controller", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "apps/v1", Time: &benchTime, FieldsType: "FieldsV1",
				FieldsV1: fields(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"%s\"}":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:controller":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}`, fooUID(i)),
			},
			{
				Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "apps/v1", Time: &benchTime, FieldsType: "FieldsV1",
				FieldsV1: fields(`{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}}}`),
			},
			{
				Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "apps/v1", Time: &benchTime, FieldsType: "FieldsV1",
				FieldsV1:    fields(`{"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Progressing\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}`),
				Subresource: "status",
			},
		}
	}
	return d
}

// decodingListReactor answers list calls from tracker like the default
// reactor, then encodes the list as JSON and decodes it again with the
// client's codecs. The informer then stores objects that own every string
// and byte slice, as objects decoded from an API server response do,
// instead of deep copies that share their strings with the tracker.
func decodingListReactor(tracker clienttesting.ObjectTracker, scheme *runtime.Scheme, codecs serializer.CodecFactory) clienttesting.ReactionFunc {
	fallback := clienttesting.ObjectReaction(tracker)
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := fallback(action)
		if err != nil || obj == nil {
			return handled, obj, err
		}
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil {
			return true, nil, fmt.Errorf("kind of %T: %w", obj, err)
		}
		data, err := runtime.Encode(codecs.LegacyCodec(gvks[0].GroupVersion()), obj)
		if err != nil {
			return true, nil, fmt.Errorf("encoding %T: %w", obj, err)
		}
		decoded, err := runtime.Decode(codecs.UniversalDeserializer(), data)
		if err != nil {
			return true, nil, fmt.Errorf("decoding %T: %w", obj, err)
		}
		return true, decoded, nil
	}
}
