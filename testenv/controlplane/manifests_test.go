package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

func TestReadAndCreateObjects(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	roles, err := ReadObjects(filepath.Join(root, "examples", "foo", "deploy", "role.yaml"))
	require.NoError(t, err)
	bindings, err := ReadObjects(filepath.Join(root, "examples", "foo", "deploy", "rbac.yaml"))
	require.NoError(t, err)
	objs := append(roles, bindings...)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
	}
	// role.yaml: the markers' roles; rbac.yaml: their bindings, then the
	// Role (and its binding) of what the Deployment makes the operator do.
	assert.Equal(t, []string{"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "Role", "RoleBinding"}, kinds)

	kube := fake.NewClientset()
	require.NoError(t, CreateObjects(context.Background(), kube, objs...))
	role, err := kube.RbacV1().ClusterRoles().Get(context.Background(), "foo-controller", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, role.Rules)

	err = CreateObjects(context.Background(), kube, &appsv1.Deployment{})
	assert.ErrorContains(t, err, "not supported")
	err = CreateObjects(context.Background(), kube, objs[0].(*rbacv1.ClusterRole))
	assert.ErrorContains(t, err, "already exists")

	_, err = ReadObjects(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.Error(t, err)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: example.com/v1\nkind: Unknown\n"), 0o600))
	_, err = ReadObjects(bad)
	assert.ErrorContains(t, err, "decoding")
}

func TestWriteKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, WriteKubeconfig(path, &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "secret",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}, "someone"))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, "secret", cfg.BearerToken)
	assert.Equal(t, []byte("ca"), cfg.CAData)
}
