package main

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	storagev1alpha1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1alpha1"
	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

// noCertificate stands for the certificates of a server whose handler the
// tests call directly.
type noCertificate struct{}

func (noCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }

// serve returns the handler of the webhook at path, as the operator's
// server routes to it.
func serve(t *testing.T, w bucketWebhooks, path string) http.Handler {
	t.Helper()
	opts, err := w.handlers()
	require.NoError(t, err)
	srv, err := webhook.NewServer("127.0.0.1:0", noCertificate{}, opts...)
	require.NoError(t, err)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.URL.Path = path
		srv.Handler().ServeHTTP(rw, r)
	})
}

func bucket(spec storagev1.BucketSpec) *storagev1.Bucket {
	return &storagev1.Bucket{TypeMeta: metav1.TypeMeta{APIVersion: storagev1.SchemeGroupVersion.String(), Kind: "Bucket"},
		ObjectMeta: metav1.ObjectMeta{Name: "photos"}, Spec: spec}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name          string
		defaultRegion string
		spec, want    storagev1.BucketSpec
	}{
		{name: "empty", defaultRegion: "eu-west-1", spec: storagev1.BucketSpec{},
			want: storagev1.BucketSpec{Region: "eu-west-1", DeletionPolicy: storagev1.DeletionPolicyDelete}},
		{name: "set fields are kept", defaultRegion: "eu-west-1",
			spec: storagev1.BucketSpec{Region: "us-east-1", Versioning: true, DeletionPolicy: storagev1.DeletionPolicyRetain},
			want: storagev1.BucketSpec{Region: "us-east-1", Versioning: true, DeletionPolicy: storagev1.DeletionPolicyRetain}},
		{name: "no default region", spec: storagev1.BucketSpec{},
			want: storagev1.BucketSpec{DeletionPolicy: storagev1.DeletionPolicyDelete}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := serve(t, bucketWebhooks{defaultRegion: tt.defaultRegion}, webhookPathDefaultBucket)
			req := webhooktest.Request(admissionv1.Create, bucket(tt.spec), nil)
			resp := webhooktest.Admit(t, h, req)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Equal(t, tt.want, webhooktest.Patched(t, req, resp, &storagev1.Bucket{}).Spec)
		})
	}
}

func TestValidate(t *testing.T) {
	regions := []string{"eu-west-1", "us-east-1"}
	retain := storagev1.BucketSpec{Region: "eu-west-1", DeletionPolicy: storagev1.DeletionPolicyRetain}
	tests := []struct {
		name         string
		regions      []string
		op           admissionv1.Operation
		spec         storagev1.BucketSpec
		old          *storagev1.BucketSpec
		wantCauses   []metav1.StatusCause
		wantWarnings []string
	}{
		{name: "a listed region", regions: regions, op: admissionv1.Create, spec: storagev1.BucketSpec{Region: "us-east-1"}},
		{name: "any region without a list", op: admissionv1.Create, spec: storagev1.BucketSpec{Region: "mars-1"}},
		{name: "no region", regions: regions, op: admissionv1.Create, spec: storagev1.BucketSpec{},
			wantCauses: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.region",
				Message: "Required value: the operator has no --default-region to set"}}},
		{name: "an unlisted region", regions: regions, op: admissionv1.Update, spec: storagev1.BucketSpec{Region: "mars-1"}, old: &storagev1.BucketSpec{Region: "eu-west-1"},
			wantCauses: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueNotSupported, Field: "spec.region",
				Message: `Unsupported value: "mars-1": supported values: "eu-west-1", "us-east-1"`}}},
		{name: "Retain is warned of", regions: regions, op: admissionv1.Create, spec: retain,
			wantWarnings: []string{"spec.deletionPolicy: Retain: the bucket stays in the storage service after the Bucket is deleted"}},
		{name: "once", regions: regions, op: admissionv1.Update, spec: retain, old: &retain},
		{name: "a deletion is not checked", regions: regions, op: admissionv1.Delete, old: &storagev1.BucketSpec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := serve(t, bucketWebhooks{regions: tt.regions}, webhookPathValidateBucket)
			var obj, old *storagev1.Bucket
			if tt.op != admissionv1.Delete {
				obj = bucket(tt.spec)
			}
			if tt.old != nil {
				old = bucket(*tt.old)
			}
			resp := webhooktest.Admit(t, h, webhooktest.Request(tt.op, obj, old))
			assert.Equal(t, tt.wantWarnings, resp.Warnings)
			if tt.wantCauses == nil {
				assert.True(t, resp.Allowed, "%+v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			assert.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
			assert.Equal(t, tt.wantCauses, resp.Result.Details.Causes)
		})
	}
}

func TestConversion(t *testing.T) {
	h := serve(t, bucketWebhooks{}, webhookPathConvert)
	alpha := &storagev1alpha1.Bucket{TypeMeta: metav1.TypeMeta{APIVersion: storagev1alpha1.SchemeGroupVersion.String(), Kind: "Bucket"},
		ObjectMeta: metav1.ObjectMeta{Name: "photos", UID: "1", Annotations: map[string]string{storagev1alpha1.AnnotationDeletionPolicy: "Retain", "team": "media"}},
		Spec:       storagev1alpha1.BucketSpec{Region: "eu-west-1", Versioning: true},
		Status:     storagev1alpha1.BucketStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{{Type: storagev1.ConditionReady, Status: metav1.ConditionTrue}}},
	}
	var v1 storagev1.Bucket
	require.NoError(t, json.Unmarshal(webhooktest.Convert(t, h, storagev1.SchemeGroupVersion.String(), alpha), &v1))
	assert.Equal(t, storagev1.BucketSpec{Region: "eu-west-1", Versioning: true, DeletionPolicy: storagev1.DeletionPolicyRetain}, v1.Spec)
	assert.Equal(t, map[string]string{"team": "media"}, v1.Annotations, "the policy is a field in v1")
	assert.Equal(t, int64(3), v1.Status.ObservedGeneration)
	assert.Len(t, v1.Status.Conditions, 1)

	var back storagev1alpha1.Bucket
	require.NoError(t, json.Unmarshal(webhooktest.Convert(t, h, storagev1alpha1.SchemeGroupVersion.String(), &v1), &back))
	assert.Equal(t, alpha, &back)

	// Every field of either version survives a round trip through the other.
	webhooktest.RoundTrip(t, h, "Bucket", bucketVersions(), 1, 300)
}
