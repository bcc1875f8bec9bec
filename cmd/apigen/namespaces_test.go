package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// A +kubebuilder:rbac marker with namespace= grants the operator a Role in
// a namespace that is not its own: typically one that already exists and
// holds someone else's objects (the namespace of the ConfigMaps or Secrets
// the operator reads). -deploy now lists that namespace as a Namespace of
// the operator's kustomization, so `kubectl delete -k deploy` (uninstalling
// the operator) deletes the namespace and everything in it, and `kubectl
// apply -k` takes it over (last-applied annotation).
func TestDeployDoesNotOwnTheNamespacesOfMarkersRoles(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{"webhooks/webhooks.go": kubebuilderWebhooks +
		"\n// +kubebuilder:rbac:groups=\"\",resources=configmaps,verbs=get;list;watch,namespace=monitoring\n"})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)
	require.Contains(t, files["deploy/role.yaml"], "namespace: monitoring", "the marker's Role")
	for _, doc := range strings.Split(files["deploy/namespace.yaml"], "\n---\n") {
		var ns corev1.Namespace
		require.NoError(t, yaml.Unmarshal([]byte(doc), &ns))
		require.NotEqual(t, "monitoring", ns.Name,
			"deploy/namespace.yaml lists the Namespace of a marker's Role, which kubectl delete -k deletes with its objects:\n%s", files["deploy/namespace.yaml"])
	}
}
