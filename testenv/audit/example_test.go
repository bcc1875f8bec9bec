package audit_test

import (
	"fmt"
	"strings"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

// controllerWrites is the package documentation's example: the writes of a
// controller running as a ServiceAccount.
func controllerWrites(cp *controlplane.ControlPlane) error {
	events, err := audit.ReadFile(cp.AuditLogPath())
	if err != nil {
		return err
	}
	writes := audit.Select(events, audit.ByUser("system:serviceaccount:foo:foo-controller"), audit.Writes())
	fmt.Println(len(writes), "writes by the controller")
	return nil
}

var _ = controllerWrites

func ExampleCount() {
	log := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"1","stage":"ResponseComplete","verb":"create","user":{"username":"alice"},"objectRef":{"resource":"configmaps","namespace":"ns","name":"a","apiVersion":"v1"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-11-21T01:00:00Z","stageTimestamp":"2026-11-21T01:00:00Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"2","stage":"ResponseComplete","verb":"update","user":{"username":"alice"},"objectRef":{"resource":"configmaps","namespace":"ns","name":"a","apiVersion":"v1"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-11-21T01:00:01Z","stageTimestamp":"2026-11-21T01:00:01Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"3","stage":"ResponseComplete","verb":"get","user":{"username":"alice"},"objectRef":{"resource":"configmaps","namespace":"ns","name":"a","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-21T01:00:02Z","stageTimestamp":"2026-11-21T01:00:02Z"}
`
	events, err := audit.Parse(strings.NewReader(log))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(audit.Count(events, audit.ByUser("alice"), audit.Writes()), "writes")
	fmt.Println(audit.Count(events, audit.ByUser("alice"), audit.Writes(), audit.Succeeded()), "succeeded")
	// Output:
	// 2 writes
	// 1 succeeded
}
