package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// ReadObjects decodes every YAML or JSON document of a manifest file into a
// typed object of client-go's scheme, in file order. Empty documents are
// skipped; a document of a kind client-go does not know is an error.
func ReadObjects(path string) ([]runtime.Object, error) {
	docs, err := readDocuments(path)
	if err != nil {
		return nil, err
	}
	var objs []runtime.Object
	for _, doc := range docs {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// readDocuments splits a YAML file into its documents that are not empty.
func readDocuments(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// CreateObjects creates objs in order with kube. It knows the kinds that
// set up a controller's identity (Namespace, ServiceAccount, ClusterRole,
// ClusterRoleBinding, Role, RoleBinding) and stops at the first error or
// object of another kind.
func CreateObjects(ctx context.Context, kube kubernetes.Interface, objs ...runtime.Object) error {
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = kube.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = kube.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = kube.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = kube.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = kube.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			return fmt.Errorf("creating a %T is not supported", obj)
		}
		if err != nil {
			return fmt.Errorf("creating %T: %w", obj, err)
		}
	}
	return nil
}
