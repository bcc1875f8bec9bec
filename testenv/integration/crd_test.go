package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

// TestCRDAccepted checks that the API server took the CRD as it is, with
// its printer columns.
func TestCRDAccepted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ext, err := apiextensionsclient.NewForConfig(cp.Config())
	require.NoError(t, err)
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "foos.samplecontroller.k8s.io", metav1.GetOptions{})
	require.NoError(t, err)
	conds := map[apiextensionsv1.CustomResourceDefinitionConditionType]apiextensionsv1.ConditionStatus{}
	for _, c := range crd.Status.Conditions {
		conds[c.Type] = c.Status
	}
	assert.Equal(t, apiextensionsv1.ConditionTrue, conds[apiextensionsv1.Established])
	assert.Equal(t, apiextensionsv1.ConditionTrue, conds[apiextensionsv1.NamesAccepted])
	assert.NotEqual(t, apiextensionsv1.ConditionTrue, conds[apiextensionsv1.NonStructuralSchema], "the schema is structural")
	// The api-approved annotation lets a *.k8s.io group in; its
	// "unapproved, ..." value is reported as such.
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.KubernetesAPIApprovalPolicyConformant {
			assert.Equal(t, "UnapprovedAnnotation", c.Reason)
		}
	}
	assert.Contains(t, conds, apiextensionsv1.KubernetesAPIApprovalPolicyConformant)

	// kubectl get foos asks for a Table: the printer columns come back.
	ns := newNamespace(t)
	_, foos := adminClients(t)
	_, err = foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: "table"},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: "table", Replicas: ptr.To[int32](3)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	raw, err := foos.SamplecontrollerV1alpha1().RESTClient().Get().Namespace(ns).Resource("foos").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	require.NoError(t, err)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table))
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	assert.Equal(t, []string{"Name", "Deployment", "Desired", "Available", "Ready", "Age"}, columns)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []any{"table", "table", float64(3)}, table.Rows[0].Cells[:3])
}

// TestCRDValidation sends Foos straight to the API server (as raw JSON, so
// that missing fields stay missing) and checks what the schema accepts,
// defaults and rejects.
func TestCRDValidation(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	_, foos := adminClients(t)
	rest := foos.SamplecontrollerV1alpha1().RESTClient()

	label63 := strings.Repeat("a", 63)
	longest := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	require.Len(t, longest, samplev1alpha1.DeploymentNameMaxLength)

	tests := []struct {
		name string
		spec string
		// fooName is the Foo's name, if not the default one.
		fooName string
		// wantReplicas is the stored spec.replicas of an accepted Foo.
		wantReplicas int32
		// wantField and wantText must both appear in the rejection.
		wantField, wantText string
		// objectRule: the rejection comes from a CEL rule of the whole
		// object (a schema cannot bound metadata.name), whose cause names
		// no field.
		objectRule bool
	}{
		{name: "replicas unset defaults to 1", spec: `{"deploymentName":"web"}`, wantReplicas: 1},
		{name: "zero replicas", spec: `{"deploymentName":"web","replicas":0}`, wantReplicas: 0},
		{name: "the most replicas", spec: `{"deploymentName":"web","replicas":1000}`, wantReplicas: 1000},
		{name: "the longest name", spec: `{"deploymentName":"` + longest + `"}`, wantReplicas: 1},
		{name: "no spec", spec: ``, wantField: "spec", wantText: "Required value"},
		{name: "no deploymentName", spec: `{"replicas":1}`, wantField: "spec.deploymentName", wantText: "Required value"},
		{name: "empty deploymentName", spec: `{"deploymentName":""}`, wantField: "spec.deploymentName", wantText: "at least 1 chars long"},
		{name: "upper case deploymentName", spec: `{"deploymentName":"Web"}`, wantField: "spec.deploymentName", wantText: "should match"},
		{name: "underscore in deploymentName", spec: `{"deploymentName":"my_web"}`, wantField: "spec.deploymentName", wantText: "should match"},
		{name: "deploymentName ends with a dash", spec: `{"deploymentName":"web-"}`, wantField: "spec.deploymentName", wantText: "should match"},
		{name: "deploymentName too long", spec: `{"deploymentName":"` + longest + `a"}`, wantField: "spec.deploymentName", wantText: "253"},
		{name: "negative replicas", spec: `{"deploymentName":"web","replicas":-1}`, wantField: "spec.replicas", wantText: "greater than or equal to 0"},
		{name: "too many replicas", spec: `{"deploymentName":"web","replicas":1001}`, wantField: "spec.replicas", wantText: "less than or equal to 1000"},
		{name: "replicas not a number", spec: `{"deploymentName":"web","replicas":"3"}`, wantField: "spec.replicas", wantText: "integer"},
		{name: "the longest Foo name", fooName: label63, spec: `{"deploymentName":"web"}`, wantReplicas: 1},
		{name: "a Foo name too long for a label", fooName: label63 + "a", spec: `{"deploymentName":"web"}`,
			wantField: "metadata.name", wantText: "at most 63 characters", objectRule: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("foo-%d", i)
			if tt.fooName != "" {
				name = tt.fooName
			}
			body := fmt.Sprintf(`{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo","metadata":{"name":%q}`, name)
			if tt.spec != "" {
				body += `,"spec":` + tt.spec
			}
			body += "}"
			raw, err := rest.Post().Namespace(ns).Resource("foos").Body([]byte(body)).DoRaw(t.Context())
			err = statusError(raw, err)
			if tt.wantField == "" {
				require.NoError(t, err, "%s", raw)
				var got samplev1alpha1.Foo
				require.NoError(t, json.Unmarshal(raw, &got))
				require.NotNil(t, got.Spec.Replicas)
				assert.Equal(t, tt.wantReplicas, *got.Spec.Replicas)
				return
			}
			require.Error(t, err)
			require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			assert.Contains(t, err.Error(), tt.wantField)
			assert.Contains(t, err.Error(), tt.wantText)
			if tt.objectRule {
				return
			}
			var fields []string
			if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
				for _, c := range status.Status().Details.Causes {
					fields = append(fields, c.Field)
				}
			}
			assert.Contains(t, fields, tt.wantField, "the causes name the field")
		})
	}
}

// statusError turns the body of a failed raw request back into the API
// error it describes (DoRaw keeps only a generic message for a Status it
// cannot decode with the client's scheme).
func statusError(body []byte, err error) error {
	if err == nil {
		return nil
	}
	var status metav1.Status
	if json.Unmarshal(body, &status) != nil || status.Kind != "Status" {
		return err
	}
	return &apierrors.StatusError{ErrStatus: status}
}

// getScale and putScale use the Foo's scale subresource through the REST
// client; the Scale is autoscaling/v1, which the Foo clientset's scheme does
// not know, so it travels as JSON.
func (h *harness) getScale(name string) *autoscalingv1.Scale {
	h.t.Helper()
	raw, err := h.foos.SamplecontrollerV1alpha1().RESTClient().Get().
		Namespace(h.ns).Resource("foos").Name(name).SubResource("scale").DoRaw(h.t.Context())
	require.NoError(h.t, err, "%s", raw)
	var s autoscalingv1.Scale
	require.NoError(h.t, json.Unmarshal(raw, &s))
	return &s
}

func (h *harness) putScale(s *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	h.t.Helper()
	body, err := json.Marshal(s)
	require.NoError(h.t, err)
	raw, err := h.foos.SamplecontrollerV1alpha1().RESTClient().Put().
		Namespace(h.ns).Resource("foos").Name(s.Name).SubResource("scale").Body(body).DoRaw(h.t.Context())
	if err != nil {
		return nil, statusError(raw, err)
	}
	var out autoscalingv1.Scale
	require.NoError(h.t, json.Unmarshal(raw, &out))
	return &out, nil
}

// TestScaleSubresource scales a Foo the way kubectl scale and autoscalers
// do, and checks that the controller follows.
func TestScaleSubresource(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	h.createFoo("scaled", "scaled-web", ptr.To[int32](2))
	h.waitDeployment("scaled-web")
	h.makeAvailable("scaled-web")
	before := h.waitReady("scaled", 2)

	s := h.getScale("scaled")
	assert.Equal(t, "Scale", s.Kind)
	assert.Equal(t, int32(2), s.Spec.Replicas, "spec.replicas")
	assert.Equal(t, int32(2), s.Status.Replicas, "status.availableReplicas")

	s.Spec.Replicas = 4
	scaled, err := h.putScale(s)
	require.NoError(t, err)
	assert.Equal(t, int32(4), scaled.Spec.Replicas)
	f := h.getFoo("scaled")
	assert.Equal(t, int32(4), *f.Spec.Replicas)
	assert.Equal(t, before.Generation+1, f.Generation, "scaling changes the spec")

	// The controller scales the Deployment and reports the Foo not Ready
	// until the new replicas are available.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := h.kube.AppsV1().Deployments(h.ns).Get(t.Context(), "scaled-web", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, int32(4), *d.Spec.Replicas)
	}, waitTimeout, pollEvery, "the Deployment is scaled")
	h.waitFooStatus("scaled", "not Ready while scaling", func(c *assert.CollectT, f *samplev1alpha1.Foo) {
		assert.Equal(c, f.Generation, f.Status.ObservedGeneration)
		cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, samplev1alpha1.ReasonDeploymentNotReady, cond.Reason)
		}
	})
	h.makeAvailable("scaled-web")
	h.waitReady("scaled", 4)
	assert.Equal(t, int32(4), h.getScale("scaled").Status.Replicas, "the scale status follows availableReplicas")

	// The schema's bounds hold for scaling too.
	for _, replicas := range []int32{-1, 1001} {
		s := h.getScale("scaled")
		s.Spec.Replicas = replicas
		_, err := h.putScale(s)
		require.Error(t, err, "replicas %d", replicas)
		assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
		assert.Contains(t, err.Error(), "spec.replicas")
	}
	assert.Equal(t, int32(4), *h.getFoo("scaled").Spec.Replicas)
}
