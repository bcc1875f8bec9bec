package webhooktest_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

// A kind with free-form values (apiextensionsv1.JSON, the type of a
// field with x-kubernetes-preserve-unknown-fields, as Helm values or a
// plugin's config are) in both versions, converted by JSON as the
// skeleton apigen create api writes does.
type valuesSpec struct {
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

type valuesV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              valuesSpec `json:"spec,omitempty"`
}

func (x *valuesV1) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type valuesV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              valuesSpec `json:"spec,omitempty"`
}

func (x *valuesV2) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func copySpec(src, dst *valuesSpec) error {
	data, err := json.Marshal(src)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, dst)
}

// RoundTrip, which the conversion test that apigen create webhook
// -conversion writes calls, passes on an exact conversion of a kind
// whose spec has an apiextensionsv1.JSON field: the random objects it
// makes are objects an API server could hold (valid JSON in the field),
// so that the generated test passes until the user's conversion loses
// something.
func TestRoundTripJSONField(t *testing.T) {
	versions := []webhook.Version[*valuesV1]{
		webhook.Hub[*valuesV1]("values.example.com/v1"),
		webhook.Spoke("values.example.com/v2", func(src *valuesV2, dst *valuesV1) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			return copySpec(&src.Spec, &dst.Spec)
		}, func(src *valuesV1, dst *valuesV2) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			return copySpec(&src.Spec, &dst.Spec)
		}),
	}
	h, err := webhook.Conversion(versions, webhook.WithKind("Values"))
	require.NoError(t, err)
	got := failures(t, func(tb testing.TB) { webhooktest.RoundTrip(tb, h, "Values", versions, 1, 20) })
	assert.Empty(t, got, "an exact conversion fails RoundTrip")
}

// The free-form fields of every shape (apiextensionsv1.JSON and
// runtime.RawExtension, by value and by pointer) round-trip through an
// exact conversion.
type freeForm struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	JSON              apiextensionsv1.JSON     `json:"json"`
	JSONPtr           *apiextensionsv1.JSON    `json:"jsonPtr,omitempty"`
	Raw               k8sruntime.RawExtension  `json:"raw"`
	RawPtr            *k8sruntime.RawExtension `json:"rawPtr,omitempty"`
	List              []apiextensionsv1.JSON   `json:"list,omitempty"`
}

func (x *freeForm) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type freeFormV2 struct{ freeForm }

func (x *freeFormV2) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func TestRoundTripFreeFormFields(t *testing.T) {
	copyFields := func(src, dst *freeForm) error {
		meta := dst.ObjectMeta
		data, err := json.Marshal(src)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, dst); err != nil {
			return err
		}
		dst.ObjectMeta = meta
		return nil
	}
	versions := []webhook.Version[*freeForm]{
		webhook.Hub[*freeForm]("free.example.com/v1"),
		webhook.Spoke("free.example.com/v2", func(src *freeFormV2, dst *freeForm) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			return copyFields(&src.freeForm, dst)
		}, func(src *freeForm, dst *freeFormV2) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			return copyFields(src, &dst.freeForm)
		}),
	}
	h, err := webhook.Conversion(versions, webhook.WithKind("FreeForm"))
	require.NoError(t, err)
	got := failures(t, func(tb testing.TB) { webhooktest.RoundTrip(tb, h, "FreeForm", versions, 7, 50) })
	assert.Empty(t, got, "an exact conversion fails RoundTrip")
}
