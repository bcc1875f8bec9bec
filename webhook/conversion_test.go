package webhook_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

// widgetV1 is the first version of a Widget: one color.
type widgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size  int32  `json:"size,omitempty"`
		Color string `json:"color,omitempty"`
	} `json:"spec"`
}

func (w *widgetV1) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// widgetV2 is the hub: a paint with a color and a finish.
type widgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size  int32 `json:"size,omitempty"`
		Paint struct {
			Color  string `json:"color,omitempty"`
			Finish string `json:"finish,omitempty"`
		} `json:"paint"`
	} `json:"spec"`
}

func (w *widgetV2) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// finishAnnotation keeps a v2 finish in a v1 object, so that nothing is
// lost on the way back.
const finishAnnotation = "widgets.example.com/finish"

func v1ToHub(src *widgetV1, dst *widgetV2) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec.Size = src.Spec.Size
	dst.Spec.Paint.Color = src.Spec.Color
	if finish, ok := dst.Annotations[finishAnnotation]; ok {
		dst.Spec.Paint.Finish = finish
		delete(dst.Annotations, finishAnnotation)
	}
	return nil
}

func hubToV1(src *widgetV2, dst *widgetV1) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec.Size = src.Spec.Size
	dst.Spec.Color = src.Spec.Paint.Color
	if src.Spec.Paint.Finish != "" {
		if dst.Annotations == nil {
			dst.Annotations = map[string]string{}
		}
		dst.Annotations[finishAnnotation] = src.Spec.Paint.Finish
	}
	return nil
}

func widgetVersions() []webhook.Version[*widgetV2] {
	return []webhook.Version[*widgetV2]{
		webhook.Spoke("widgets.example.com/v1", v1ToHub, hubToV1),
		webhook.Hub[*widgetV2]("widgets.example.com/v2"),
	}
}

func widgetConversion(t *testing.T, versions []webhook.Version[*widgetV2]) http.Handler {
	t.Helper()
	h, err := webhook.Conversion(versions, webhook.WithKind("Widget"))
	require.NoError(t, err)
	return h
}

func TestConversionRoundTrip(t *testing.T) {
	versions := widgetVersions()
	webhooktest.RoundTrip(t, widgetConversion(t, versions), "Widget", versions, 1, 200)
}

func TestConversionConverts(t *testing.T) {
	h := widgetConversion(t, widgetVersions())
	v2 := `{"apiVersion":"widgets.example.com/v2","kind":"Widget","metadata":{"name":"a","namespace":"ns","uid":"u1"},"spec":{"size":3,"paint":{"color":"red","finish":"matte"}}}`
	got := webhooktest.Convert(t, h, "widgets.example.com/v1", []byte(v2))
	assert.JSONEq(t, `{"apiVersion":"widgets.example.com/v1","kind":"Widget","metadata":{"name":"a","namespace":"ns","uid":"u1",
		"annotations":{"widgets.example.com/finish":"matte"}},"spec":{"size":3,"color":"red"}}`, string(got))
	assert.JSONEq(t, v2, string(webhooktest.Convert(t, h, "widgets.example.com/v2", got)))
	assert.JSONEq(t, v2, string(webhooktest.Convert(t, h, "widgets.example.com/v2", []byte(v2))), "the same version is passed through")
}

func TestConversionRefusals(t *testing.T) {
	v1 := `{"apiVersion":"widgets.example.com/v1","kind":"Widget","metadata":{"name":"a","uid":"u1"},"spec":{"color":"red"}}`
	failing := widgetVersions()
	failing[0] = webhook.Spoke("widgets.example.com/v1", func(*widgetV1, *widgetV2) error { return errors.New("no paint") }, hubToV1)
	forgetful := widgetVersions()
	forgetful[0] = webhook.Spoke("widgets.example.com/v1", func(src *widgetV1, dst *widgetV2) error { return nil }, hubToV1)
	panicky := widgetVersions()
	panicky[0] = webhook.Spoke("widgets.example.com/v1", func(*widgetV1, *widgetV2) error { panic("boom") }, hubToV1)
	tests := []struct {
		name     string
		versions []webhook.Version[*widgetV2]
		desired  string
		objects  []string
		want     string
	}{
		{name: "unknown desired version", desired: "widgets.example.com/v3", objects: []string{v1}, want: `Widget has no version "widgets.example.com/v3" to convert to`},
		{name: "unknown source version", desired: "widgets.example.com/v2",
			objects: []string{`{"apiVersion":"widgets.example.com/v0","kind":"Widget","metadata":{"name":"a"}}`}, want: `no version "widgets.example.com/v0" to convert from`},
		{name: "another kind", desired: "widgets.example.com/v2",
			objects: []string{`{"apiVersion":"widgets.example.com/v1","kind":"Gadget","metadata":{"name":"a"}}`}, want: `converts Widget objects, not "Gadget"`},
		{name: "not an object", desired: "widgets.example.com/v2", objects: []string{`[1]`}, want: "not a JSON object"},
		{name: "an object that does not decode", desired: "widgets.example.com/v2",
			objects: []string{`{"apiVersion":"widgets.example.com/v1","kind":"Widget","spec":{"size":"big"}}`}, want: "decoding widgets.example.com/v1 Widget"},
		{name: "all or nothing", desired: "widgets.example.com/v2",
			objects: []string{v1, `{"apiVersion":"widgets.example.com/v1","kind":"Gadget"}`}, want: "object 1:"},
		{name: "a conversion error", versions: failing, desired: "widgets.example.com/v2", objects: []string{v1}, want: "no paint"},
		{name: "metadata lost", versions: forgetful, desired: "widgets.example.com/v2", objects: []string{v1},
			want: `metadata.name changed from "a" to ""`},
		{name: "a panic", versions: panicky, desired: "widgets.example.com/v2", objects: []string{v1}, want: "panicked: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			versions := tt.versions
			if versions == nil {
				versions = widgetVersions()
			}
			req := &apiextensionsv1.ConversionRequest{UID: "u", DesiredAPIVersion: tt.desired}
			for _, o := range tt.objects {
				req.Objects = append(req.Objects, runtime.RawExtension{Raw: []byte(o)})
			}
			resp := convertReview(t, widgetConversion(t, versions), req)
			assert.Equal(t, metav1.StatusFailure, resp.Result.Status)
			assert.Contains(t, resp.Result.Message, tt.want)
			assert.Empty(t, resp.ConvertedObjects)
		})
	}
}

// convertReview sends req to h and returns its response.
func convertReview(t *testing.T, h http.Handler, req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	t.Helper()
	body, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"}, Request: req})
	require.NoError(t, err)
	w := postJSON(h, body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var out apiextensionsv1.ConversionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
	require.NotNil(t, out.Response)
	assert.Equal(t, req.UID, out.Response.UID)
	return out.Response
}

func TestConversionNeedsVersions(t *testing.T) {
	hub := webhook.Hub[*widgetV2]("widgets.example.com/v2")
	tests := []struct {
		name     string
		versions []webhook.Version[*widgetV2]
	}{
		{name: "one version", versions: []webhook.Version[*widgetV2]{hub}},
		{name: "a version twice", versions: []webhook.Version[*widgetV2]{hub, hub}},
		{name: "a version not made by Spoke or Hub", versions: []webhook.Version[*widgetV2]{hub, {}}},
		{name: "not a group/version", versions: []webhook.Version[*widgetV2]{hub, webhook.Hub[*widgetV2]("a/b/c")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webhook.Conversion(tt.versions)
			assert.Error(t, err)
		})
	}
}

func TestConversionRefusesBadReviews(t *testing.T) {
	h := widgetConversion(t, widgetVersions())
	for name, body := range map[string]string{
		"an AdmissionReview": `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`,
		"no request":         `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`,
		"not JSON":           `{"apiVersion":`,
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, http.StatusBadRequest, postJSON(h, []byte(body)).Code)
		})
	}
}
