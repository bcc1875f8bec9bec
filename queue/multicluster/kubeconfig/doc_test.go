package kubeconfig_test

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// newFleet is the example of the package documentation.
func newFleet(kubeClient kubernetes.Interface, engage multicluster.EngageFunc[int]) error {
	p, err := kubeconfig.New(kubeconfig.Config{Client: kubeClient, Namespace: "fleet-system"})
	if err != nil {
		return err
	}
	fleet, err := multicluster.New("copier", p, engage)
	_ = fleet
	return err
}

// multiclusterRuntimeSecrets is the example of the package documentation
// that reads multicluster-runtime's Secrets.
func multiclusterRuntimeSecrets(kubeClient kubernetes.Interface) (*kubeconfig.Provider, error) {
	p, err := kubeconfig.New(kubeconfig.Config{
		Client:    kubeClient,
		Namespace: "fleet-system",
		Selector:  labels.SelectorFromSet(labels.Set{"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}),
		DataKey:   "kubeconfig",
	})
	return p, err
}

var _, _ = newFleet, multiclusterRuntimeSecrets
