package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// controllerUser is the static-token identity the controller under test
// authenticates as; the audit log counts its requests.
const controllerUser = "foo-controller"

// cp is the control plane shared by every test of this binary.
var cp *controlplane.ControlPlane

// repoRoot is the root of the ctrlkit module (the working tree under test).
var repoRoot string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = root

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err = controlplane.Start(ctx, controlplane.Options{
		CRDs:  []string{filepath.Join(repoRoot, "foo", "crd")},
		Users: []controlplane.User{{Name: controllerUser}},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	if err := grantControllerRole(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		cp.DumpLogs(os.Stderr, 40)
		_ = cp.Stop()
		return 1
	}
	cancel()

	code := m.Run()
	if code != 0 {
		cp.DumpLogs(os.Stderr, 60)
	}
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	return code
}

// leakOptions ignores the idle keep-alive connections of client-go's
// shared HTTP transports and klog's flush daemon.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	}
}

// grantControllerRole creates the ClusterRole the controller ships with
// (examples/foo/deploy/rbac.yaml, unchanged), binds controllerUser to it and
// waits until the API server's authorizer has seen the binding.
func grantControllerRole(ctx context.Context) error {
	admin, err := kubernetes.NewForConfig(cp.Config())
	if err != nil {
		return err
	}
	role, err := shippedClusterRole()
	if err != nil {
		return err
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ClusterRole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "foo-controller-integration"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controllerUser}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ClusterRoleBinding: %w", err)
	}
	cfg, err := cp.UserConfig(controllerUser)
	if err != nil {
		return err
	}
	asController, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := asController.AppsV1().Deployments("").List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("waiting for the controller's ClusterRole to take effect: %w", err)
	}
	return nil
}

// shippedClusterRole reads the ClusterRole from examples/foo/deploy/role.yaml.
func shippedClusterRole() (*rbacv1.ClusterRole, error) {
	path := filepath.Join(repoRoot, "examples", "foo", "deploy", "role.yaml")
	objs, err := controlplane.ReadObjects(path)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if role, ok := obj.(*rbacv1.ClusterRole); ok {
			return role, nil
		}
	}
	return nil, fmt.Errorf("no ClusterRole in %s", path)
}
