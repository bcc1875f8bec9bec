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

// A runtime.RawExtension field is `type: object` with
// x-kubernetes-preserve-unknown-fields in a CRD's schema (controller-gen's
// known type): an API server stores only JSON objects in it. A version
// that keeps the same settings as a map of free-form values (a plugin's
// config, map[string]apiextensionsv1.JSON) converts every object an API
// server can store exactly, but RoundTrip fills the RawExtension with
// strings, numbers, booleans and lists too ("values ones an API server
// could store", its doc says), so the exact conversion fails it.
type pluginV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Config            k8sruntime.RawExtension `json:"config"`
}

func (x *pluginV1) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type pluginV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Config            map[string]apiextensionsv1.JSON `json:"config"`
}

func (x *pluginV2) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func TestRoundTripRawExtensionHoldsObjects(t *testing.T) {
	recode := func(src, dst any) error {
		data, err := json.Marshal(src)
		if err != nil {
			return err
		}
		return json.Unmarshal(data, dst)
	}
	versions := []webhook.Version[*pluginV1]{
		webhook.Hub[*pluginV1]("plugins.example.com/v1"),
		webhook.Spoke("plugins.example.com/v2", func(src *pluginV2, dst *pluginV1) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			return recode(src.Config, &dst.Config)
		}, func(src *pluginV1, dst *pluginV2) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			return recode(&src.Config, &dst.Config)
		}),
	}
	h, err := webhook.Conversion(versions, webhook.WithKind("Plugin"))
	require.NoError(t, err)
	got := failures(t, func(tb testing.TB) { webhooktest.RoundTrip(tb, h, "Plugin", versions, 1, 20) })
	assert.Empty(t, got, "a conversion exact on every object an API server stores in a RawExtension field fails RoundTrip")
}

// pluginV3 keeps the settings as one apiextensionsv1.JSON, whose schema
// takes any JSON value: converting it through pluginV2's map of values
// loses what is not an object, which RoundTrip must find.
type pluginV3 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Config            apiextensionsv1.JSON `json:"config"`
}

func (x *pluginV3) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func TestRoundTripJSONHoldsAnyValue(t *testing.T) {
	versions := []webhook.Version[*pluginV3]{
		webhook.Hub[*pluginV3]("plugins.example.com/v3"),
		webhook.Spoke("plugins.example.com/v2", func(src *pluginV2, dst *pluginV3) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			data, err := json.Marshal(src.Config)
			dst.Config.Raw = data
			return err
		}, func(src *pluginV3, dst *pluginV2) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			dst.Config = nil
			_ = json.Unmarshal(src.Config.Raw, &dst.Config) // what is not an object is lost
			return nil
		}),
	}
	h, err := webhook.Conversion(versions, webhook.WithKind("Plugin"))
	require.NoError(t, err)
	got := failures(t, func(tb testing.TB) { webhooktest.RoundTrip(tb, h, "Plugin", versions, 1, 20) })
	assert.NotEmpty(t, got, "a conversion that loses the JSON values that are not objects passes RoundTrip")
}
