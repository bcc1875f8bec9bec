package crd_test

import (
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/foo/crd"
)

const dns1123SubdomainPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`

func loadCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	obj, err := crd.FooUnstructured()
	require.NoError(t, err)
	return obj
}

// field returns the value at path in obj, failing the test when it is absent.
func field(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	require.NoError(t, err, "path %v", path)
	require.True(t, found, "path %v not found", path)
	return v
}

func onlyVersion(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	versions, ok := field(t, obj.Object, "spec", "versions").([]any)
	require.True(t, ok)
	require.Len(t, versions, 1)
	v, ok := versions[0].(map[string]any)
	require.True(t, ok)
	return v
}

func schemaOf(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	s, ok := field(t, onlyVersion(t, obj), "schema", "openAPIV3Schema").(map[string]any)
	require.True(t, ok)
	return s
}

func TestIdentity(t *testing.T) {
	obj := loadCRD(t)
	tests := []struct {
		path []string
		want any
	}{
		{[]string{"apiVersion"}, "apiextensions.k8s.io/v1"},
		{[]string{"kind"}, "CustomResourceDefinition"},
		{[]string{"metadata", "name"}, crd.Name},
		{[]string{"spec", "group"}, v1alpha1.GroupName},
		{[]string{"spec", "scope"}, "Namespaced"},
		{[]string{"spec", "names", "kind"}, "Foo"},
		{[]string{"spec", "names", "listKind"}, "FooList"},
		{[]string{"spec", "names", "plural"}, "foos"},
		{[]string{"spec", "names", "singular"}, "foo"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.path, "."), func(t *testing.T) {
			assert.Equal(t, tt.want, field(t, obj.Object, tt.path...))
		})
	}
	assert.Equal(t, crd.Name, v1alpha1.Resource("foos").String())
}

func TestAPIApprovedAnnotation(t *testing.T) {
	obj := loadCRD(t)
	value, ok := obj.GetAnnotations()["api-approved.kubernetes.io"]
	require.True(t, ok, "a *.k8s.io group needs the api-approved.kubernetes.io annotation")
	assert.True(t, strings.HasPrefix(value, "unapproved"), "value %q", value)
	assert.Equal(t, "unapproved, experimental-only; please get an approval from Kubernetes API reviewers "+
		"if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups", value)
}

func TestVersionAndSubresources(t *testing.T) {
	v := onlyVersion(t, loadCRD(t))
	tests := []struct {
		path []string
		want any
	}{
		{[]string{"name"}, v1alpha1.Version},
		{[]string{"served"}, true},
		{[]string{"storage"}, true},
		{[]string{"subresources", "status"}, map[string]any{}},
		{[]string{"subresources", "scale", "specReplicasPath"}, ".spec.replicas"},
		{[]string{"subresources", "scale", "statusReplicasPath"}, ".status.availableReplicas"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.path, "."), func(t *testing.T) {
			assert.Equal(t, tt.want, field(t, v, tt.path...))
		})
	}
}

func TestPrinterColumns(t *testing.T) {
	cols, ok := field(t, onlyVersion(t, loadCRD(t)), "additionalPrinterColumns").([]any)
	require.True(t, ok)
	type column struct{ name, typ, jsonPath string }
	var got []column
	for _, c := range cols {
		m, ok := c.(map[string]any)
		require.True(t, ok)
		got = append(got, column{name: m["name"].(string), typ: m["type"].(string), jsonPath: m["jsonPath"].(string)})
	}
	assert.Equal(t, []column{
		{"Deployment", "string", ".spec.deploymentName"},
		{"Desired", "integer", ".spec.replicas"},
		{"Available", "integer", ".status.availableReplicas"},
		{"Ready", "string", `.status.conditions[?(@.type=="Ready")].status`},
		{"Age", "date", ".metadata.creationTimestamp"},
	}, got)
}

// The name limit is a CEL rule on the object (a schema cannot bound
// metadata.name), with the bound of MaxNameLength.
func TestNameLengthRule(t *testing.T) {
	rules, ok := field(t, schemaOf(t, loadCRD(t)), "x-kubernetes-validations").([]any)
	require.True(t, ok, "the schema has validation rules")
	require.Len(t, rules, 1)
	rule, ok := rules[0].(map[string]any)
	require.True(t, ok)
	assert.Equal(t, "size(self.metadata.name) <= "+strconv.Itoa(v1alpha1.MaxNameLength), rule["rule"])
	assert.Contains(t, rule["message"], "at most 63 characters")
}

func TestSpecSchema(t *testing.T) {
	s := schemaOf(t, loadCRD(t))
	tests := []struct {
		name string
		path []string
		want any
	}{
		{"spec is required", []string{"required"}, []any{"spec"}},
		{"deploymentName is required", []string{"properties", "spec", "required"}, []any{"deploymentName"}},
		{"deploymentName type", []string{"properties", "spec", "properties", "deploymentName", "type"}, "string"},
		{"deploymentName pattern", []string{"properties", "spec", "properties", "deploymentName", "pattern"}, dns1123SubdomainPattern},
		{"deploymentName maxLength", []string{"properties", "spec", "properties", "deploymentName", "maxLength"}, int64(v1alpha1.DeploymentNameMaxLength)},
		{"deploymentName minLength", []string{"properties", "spec", "properties", "deploymentName", "minLength"}, int64(1)},
		{"replicas type", []string{"properties", "spec", "properties", "replicas", "type"}, "integer"},
		{"replicas format", []string{"properties", "spec", "properties", "replicas", "format"}, "int32"},
		{"replicas minimum", []string{"properties", "spec", "properties", "replicas", "minimum"}, int64(v1alpha1.MinReplicas)},
		{"replicas maximum", []string{"properties", "spec", "properties", "replicas", "maximum"}, int64(v1alpha1.MaxReplicas)},
		{"replicas default", []string{"properties", "spec", "properties", "replicas", "default"}, int64(v1alpha1.DefaultReplicas)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, field(t, s, tt.path...))
		})
	}
}

func TestStatusSchema(t *testing.T) {
	s := schemaOf(t, loadCRD(t))
	status := []string{"properties", "status", "properties"}
	cond := append(slices.Clone(status), "conditions")
	item := append(slices.Clone(cond), "items")
	prop := func(base []string, elems ...string) []string {
		return append(slices.Clone(base), elems...)
	}
	tests := []struct {
		name string
		path []string
		want any
	}{
		{"availableReplicas", prop(status, "availableReplicas", "format"), "int32"},
		{"observedGeneration", prop(status, "observedGeneration", "format"), "int64"},
		{"conditions is a list", prop(cond, "type"), "array"},
		{"conditions list type", prop(cond, "x-kubernetes-list-type"), "map"},
		{"conditions list keys", prop(cond, "x-kubernetes-list-map-keys"), []any{"type"}},
		{"condition required fields", prop(item, "required"), []any{"lastTransitionTime", "message", "reason", "status", "type"}},
		{"condition status enum", prop(item, "properties", "status", "enum"), []any{"True", "False", "Unknown"}},
		{"condition type length", prop(item, "properties", "type", "maxLength"), int64(316)},
		{"condition observedGeneration", prop(item, "properties", "observedGeneration", "format"), "int64"},
		{"condition lastTransitionTime", prop(item, "properties", "lastTransitionTime", "format"), "date-time"},
		{"condition reason min", prop(item, "properties", "reason", "minLength"), int64(1)},
		{"condition reason max", prop(item, "properties", "reason", "maxLength"), int64(1024)},
		{"condition message max", prop(item, "properties", "message", "maxLength"), int64(32768)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, field(t, s, tt.path...))
		})
	}
}

// The reasons the API documents must be accepted by the condition schema.
func TestConditionReasonsMatchSchema(t *testing.T) {
	s := schemaOf(t, loadCRD(t))
	pattern := field(t, s, "properties", "status", "properties", "conditions", "items",
		"properties", "reason", "pattern").(string)
	re := regexp.MustCompile(pattern)
	for _, reason := range []string{
		v1alpha1.ReasonDeploymentReady,
		v1alpha1.ReasonDeploymentNotReady,
		v1alpha1.ReasonErrResourceExists,
		v1alpha1.ReasonInvalidSpec,
	} {
		assert.True(t, re.MatchString(reason), reason)
	}
	typePattern := field(t, s, "properties", "status", "properties", "conditions", "items",
		"properties", "type", "pattern").(string)
	assert.Regexp(t, typePattern, v1alpha1.ConditionReady)
}

// The schema's name rule and ValidateFooSpec agree on every name.
func TestDeploymentNamePatternAgreesWithGo(t *testing.T) {
	s := schemaOf(t, loadCRD(t))
	name := field(t, s, "properties", "spec", "properties", "deploymentName").(map[string]any)
	re := regexp.MustCompile(name["pattern"].(string))
	maxLen := int(name["maxLength"].(int64))
	minLen := int(name["minLength"].(int64))

	names := []string{
		"example-foo", "a", "0", "web.v2.example", "a-b-c", strings.Repeat("a", 253), strings.Repeat("a", 254),
		"", "-a", "a-", "A", "a_b", "a..b", ".a", "a.", "a b", "ä", "a.-b",
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			schemaOK := re.MatchString(n) && len(n) <= maxLen && len(n) >= minLen
			goOK := len(validation.IsDNS1123Subdomain(n)) == 0
			assert.Equal(t, goOK, schemaOK, "schema and IsDNS1123Subdomain disagree")
			specOK := len(v1alpha1.ValidateFooSpec(&v1alpha1.FooSpec{DeploymentName: n})) == 0
			assert.Equal(t, goOK, specOK, "ValidateFooSpec disagrees")
		})
	}
}

// Every field of the Go types has a schema property and vice versa, so that
// nothing is pruned by the API server or missing from the Go client.
func TestSchemaMatchesGoTypes(t *testing.T) {
	s := schemaOf(t, loadCRD(t))
	tests := []struct {
		name string
		typ  reflect.Type
		path []string
	}{
		{"Foo", reflect.TypeFor[v1alpha1.Foo](), []string{"properties"}},
		{"FooSpec", reflect.TypeFor[v1alpha1.FooSpec](), []string{"properties", "spec", "properties"}},
		{"FooStatus", reflect.TypeFor[v1alpha1.FooStatus](), []string{"properties", "status", "properties"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props, ok := field(t, s, tt.path...).(map[string]any)
			require.True(t, ok)
			var inSchema []string
			for k := range props {
				inSchema = append(inSchema, k)
			}
			assert.ElementsMatch(t, jsonFields(tt.typ), inSchema)
		})
	}
}

// jsonFields lists the JSON names of a struct's fields, descending into
// inlined fields.
func jsonFields(typ reflect.Type) []string {
	var names []string
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" && strings.Contains(opts, "inline") {
			names = append(names, jsonFields(f.Type)...)
			continue
		}
		names = append(names, name)
	}
	return names
}

// A structural schema gives every node a type, and x-kubernetes-list-map-keys
// name required properties of the items.
func TestSchemaIsStructural(t *testing.T) {
	var walk func(path string, node map[string]any)
	walk = func(path string, node map[string]any) {
		assert.NotEmpty(t, node["type"], "%s has no type", path)
		if props, ok := node["properties"].(map[string]any); ok {
			for k, v := range props {
				child, ok := v.(map[string]any)
				if assert.True(t, ok, "%s.%s", path, k) {
					walk(path+"."+k, child)
				}
			}
		}
		if items, ok := node["items"].(map[string]any); ok {
			walk(path+"[]", items)
		}
		if keys, ok := node["x-kubernetes-list-map-keys"].([]any); ok {
			items, _ := node["items"].(map[string]any)
			required, _ := items["required"].([]any)
			for _, k := range keys {
				assert.Contains(t, required, k, "%s: list map key %v must be required", path, k)
			}
		}
	}
	walk("openAPIV3Schema", schemaOf(t, loadCRD(t)))
}

func TestFooYAMLReturnsACopy(t *testing.T) {
	first := crd.FooYAML()
	require.NotEmpty(t, first)
	want := slices.Clone(first)
	first[0] = 'X'
	assert.Equal(t, want, crd.FooYAML())
}
