package controlplane_test

import (
	"context"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

// One control plane for a whole test binary, started in TestMain.
func ExampleStart() {
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Size: controlplane.Full,
		CRDs: []string{"testdata/crds"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cp.Stop()

	cs := kubernetes.NewForConfigOrDie(cp.Config())
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		cp.DumpLogs(os.Stderr, 50)
		return
	}
	fmt.Println(len(nodes.Items), "node, kubeconfig at", cp.KubeconfigPath())

	events, _ := cp.AuditEvents()
	fmt.Println(audit.Count(events, audit.ByUser(controlplane.AdminUser), audit.Writes()), "writes by the admin")
}
