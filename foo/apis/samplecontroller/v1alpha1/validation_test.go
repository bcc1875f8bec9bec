package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

func int32Ptr(v int32) *int32 { return &v }

func TestValidateFooSpec(t *testing.T) {
	longest := strings.Repeat("a", v1alpha1.DeploymentNameMaxLength)
	tests := []struct {
		name string
		spec *v1alpha1.FooSpec
		// want lists "<type> <field>" for every expected error, in order.
		want []string
	}{
		{name: "sample-controller example", spec: &v1alpha1.FooSpec{DeploymentName: "example-foo", Replicas: int32Ptr(1)}},
		{name: "replicas unset", spec: &v1alpha1.FooSpec{DeploymentName: "example-foo"}},
		{name: "dotted subdomain", spec: &v1alpha1.FooSpec{DeploymentName: "web.v2.example", Replicas: int32Ptr(3)}},
		{name: "longest name", spec: &v1alpha1.FooSpec{DeploymentName: longest}},
		{name: "minimum replicas", spec: &v1alpha1.FooSpec{DeploymentName: "a", Replicas: int32Ptr(v1alpha1.MinReplicas)}},
		{name: "maximum replicas", spec: &v1alpha1.FooSpec{DeploymentName: "a", Replicas: int32Ptr(v1alpha1.MaxReplicas)}},
		{
			name: "nil spec",
			spec: nil,
			want: []string{"FieldValueRequired spec"},
		},
		{
			name: "empty name",
			spec: &v1alpha1.FooSpec{},
			want: []string{"FieldValueRequired spec.deploymentName"},
		},
		{
			name: "upper case name",
			spec: &v1alpha1.FooSpec{DeploymentName: "Example"},
			want: []string{"FieldValueInvalid spec.deploymentName"},
		},
		{
			name: "underscore in name",
			spec: &v1alpha1.FooSpec{DeploymentName: "my_deployment"},
			want: []string{"FieldValueInvalid spec.deploymentName"},
		},
		{
			name: "leading dash",
			spec: &v1alpha1.FooSpec{DeploymentName: "-web"},
			want: []string{"FieldValueInvalid spec.deploymentName"},
		},
		{
			name: "name too long",
			spec: &v1alpha1.FooSpec{DeploymentName: longest + "a"},
			want: []string{"FieldValueInvalid spec.deploymentName"},
		},
		{
			name: "negative replicas",
			spec: &v1alpha1.FooSpec{DeploymentName: "web", Replicas: int32Ptr(-1)},
			want: []string{"FieldValueInvalid spec.replicas"},
		},
		{
			name: "too many replicas",
			spec: &v1alpha1.FooSpec{DeploymentName: "web", Replicas: int32Ptr(v1alpha1.MaxReplicas + 1)},
			want: []string{"FieldValueInvalid spec.replicas"},
		},
		{
			name: "every problem is reported",
			spec: &v1alpha1.FooSpec{Replicas: int32Ptr(-5)},
			want: []string{"FieldValueRequired spec.deploymentName", "FieldValueInvalid spec.replicas"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := v1alpha1.ValidateFooSpec(tt.spec)
			var got []string
			for _, err := range errs {
				got = append(got, string(err.Type)+" "+err.Field)
				assert.NotEmpty(t, err.Error())
			}
			assert.Equal(t, tt.want, got, "errors: %v", errs.ToAggregate())
		})
	}
}

func TestValidateFooSpecReplicasMessageNamesBounds(t *testing.T) {
	errs := v1alpha1.ValidateFooSpec(&v1alpha1.FooSpec{DeploymentName: "web", Replicas: int32Ptr(5000)})
	if assert.Len(t, errs, 1) {
		assert.Equal(t, field.ErrorTypeInvalid, errs[0].Type)
		assert.Equal(t, int32(5000), errs[0].BadValue)
		assert.Contains(t, errs[0].Detail, "between 0 and 1000")
	}
}

func TestBoundsMatchKubernetesLimits(t *testing.T) {
	assert.Equal(t, validation.DNS1123SubdomainMaxLength, v1alpha1.DeploymentNameMaxLength)
	assert.LessOrEqual(t, v1alpha1.MinReplicas, v1alpha1.DefaultReplicas)
	assert.LessOrEqual(t, v1alpha1.DefaultReplicas, v1alpha1.MaxReplicas)
}

func TestValidateFoo(t *testing.T) {
	valid := v1alpha1.FooSpec{DeploymentName: "web"}
	tests := []struct {
		name      string
		foo       *v1alpha1.Foo
		wantField []string
	}{
		{name: "valid", foo: &v1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Name: "example-foo"}, Spec: valid}},
		{name: "name of 63 characters", foo: &v1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 63)}, Spec: valid}},
		{name: "name too long for a label value", foo: &v1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 64)}, Spec: valid},
			wantField: []string{"metadata.name"}},
		{name: "name and spec both wrong", foo: &v1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 64)}},
			wantField: []string{"metadata.name", "spec.deploymentName"}},
		{name: "nil", foo: nil, wantField: []string{"foo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range v1alpha1.ValidateFoo(tt.foo) {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.wantField, got)
		})
	}
}
