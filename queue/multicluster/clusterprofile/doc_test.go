package clusterprofile_test

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/clusterprofile"
)

// newFleet is the example of the package documentation.
func newFleet(dynamicClient dynamic.Interface, exec clientcmdv1.ExecConfig, engage multicluster.EngageFunc[int]) error {
	p, err := clusterprofile.New(clusterprofile.Config{
		Client:    dynamicClient,
		Namespace: "fleet-system",
		Providers: []clusterprofile.AccessProvider{{Name: "secretreader", Exec: exec}},
	})
	if err != nil {
		return err
	}
	fleet, err := multicluster.New("copier", p, engage)
	_ = fleet
	return err
}

// byClusterManager is the example of the package documentation that
// selects the profiles of one cluster manager.
func byClusterManager(dynamicClient dynamic.Interface, exec clientcmdv1.ExecConfig) (*clusterprofile.Provider, error) {
	p, err := clusterprofile.New(clusterprofile.Config{
		Client:    dynamicClient,
		Namespace: "fleet-system",
		Selector:  labels.SelectorFromSet(labels.Set{"x-k8s.io/cluster-manager": "open-cluster-management"}),
		Providers: []clusterprofile.AccessProvider{{Name: "secretreader", Exec: exec}},
	})
	return p, err
}

var _, _ = newFleet, byClusterManager
