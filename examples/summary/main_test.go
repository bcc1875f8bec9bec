package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

const waitFor = 30 * time.Second

func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := bindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--workers=3"}))
	assert.Equal(t, 3, o.workers)
	assert.Equal(t, "foo-summary", o.LeaderElectID)
	tests := []struct {
		args     []string
		wantCode int
		wantMsg  string
	}{
		{args: []string{"--help"}, wantCode: 0},
		{args: []string{"--workers=0"}, wantCode: 2, wantMsg: "--workers must be positive"},
		{args: []string{"--kubeconfig=/nonexistent", "--metrics-bind-address=0", "--health-probe-bind-address=0"}, wantCode: 1, wantMsg: "loading --kubeconfig /nonexistent"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		assert.Equal(t, tt.wantCode, run(tt.args, &stderr), "%v: %s", tt.args, stderr.String())
		assert.Contains(t, stderr.String(), tt.wantMsg)
	}
}

// fooCRD is the Foo CRD as the API server shows it once established.
func fooCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "foos.samplecontroller.k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    "samplecontroller.k8s.io",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "foos", Kind: "Foo"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
		}},
	}
}

// The operator runs and is ready without the Foo CRD, summarizes the Foos
// once it is installed, stops following them when it is removed, and
// summarizes again when it returns; every goroutine ends with it.
func TestSummariesFollowTheFooCRD(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	web := &v1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
		Spec: v1alpha1.FooSpec{DeploymentName: "web", Replicas: ptr.To[int32](2)}}
	kube := fake.NewClientset()
	crds := apiextensionsfake.NewClientset()
	foos := foofake.NewClientset(web)
	apis := optional.NewAPIs(crds, nil)
	fooInformer := optional.NewInformer(apis, v1alpha1.SchemeGroupVersion.WithResource("foos"), func() cache.TypedSharedIndexInformer[*v1alpha1.Foo] {
		return fooinformers.NewSharedInformerFactory(foos, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
	})
	factory := informers.NewSharedInformerFactory(kube, 0)
	ctrl, err := newController(kube, fooInformer, factory.Core().V1().ConfigMaps())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithInformers(factory, apis), operator.WithControllers(ctrl))
	}()
	summary := func() (*corev1.ConfigMap, error) {
		return kube.CoreV1().ConfigMaps("default").Get(ctx, "web-summary", metav1.GetOptions{})
	}

	require.Eventually(t, ctrl.HasSynced, waitFor, time.Millisecond, "not ready without the CRD")
	assert.Equal(t, optional.Waiting, fooInformer.State())
	_, err = summary()
	assert.True(t, apierrors.IsNotFound(err), "a summary without the Foo API: %v", err)

	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, fooCRD(), metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cm, err := summary()
		require.NoError(c, err)
		assert.Equal(c, map[string]string{"deploymentName": "web", "replicas": "2", "availableReplicas": "0"}, cm.Data)
		assert.True(c, metav1.IsControlledBy(cm, web))
	}, waitFor, time.Millisecond)

	require.NoError(t, crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, fooCRD().Name, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return fooInformer.State() == optional.Stopped }, waitFor, time.Millisecond)
	// The garbage collector's part, done by hand: the summary goes with the Foo.
	require.NoError(t, kube.CoreV1().ConfigMaps("default").Delete(ctx, "web-summary", metav1.DeleteOptions{}))

	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, fooCRD(), metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := summary()
		assert.NoError(c, err)
	}, waitFor, time.Millisecond, "no summary once the CRD is back")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("the operator did not stop")
	}
}
