package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The controllers of init and create api grant update on their kind's
// status subresource, not only the patch of the scaffold's ApplyStatus:
// a controller that writes its status with reconcile/condition's Writer
// (write.Objects.UpdateStatus, a PUT) is allowed in a cluster too, where
// the strict fakes of its tests check no role.
func TestScaffoldControllersGrantUpdateOfStatus(t *testing.T) {
	t.Parallel()
	const want = "// +kubebuilder:rbac:groups=example.com,resources=shelves/status,verbs=update;patch\n"
	s := &scaffold{Name: "shelf-operator"}
	require.NoError(t, s.complete("example.com/v1/Shelf"))
	s.Module = "example.com/op"
	src, err := render("controller.go.tmpl", s)
	require.NoError(t, err)
	assert.Contains(t, string(src), want, "init's controller.go")

	op, _ := plannedOperator(t, nil)
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Shelf"})
	require.NoError(t, err)
	assert.Contains(t, string(p.files["shelf_controller.go"]), want, "create api's shelf_controller.go")
}

// clusterRoleVerbs returns the verbs that the ClusterRole of role.yaml's
// text grants on resource of group.
func clusterRoleVerbs(t *testing.T, roleYAML, group, resource string) []string {
	t.Helper()
	var verbs []string
	for _, doc := range strings.Split(roleYAML, "\n---\n") {
		var role rbacv1.ClusterRole
		require.NoError(t, yaml.Unmarshal([]byte(doc), &role))
		if role.Kind != "ClusterRole" {
			continue
		}
		for _, rule := range role.Rules {
			if slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) {
				verbs = append(verbs, rule.Verbs...)
			}
		}
	}
	slices.Sort(verbs)
	return slices.Compact(verbs)
}
