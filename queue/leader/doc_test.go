package leader_test

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
)

// lead is the package documentation's example; the tests run the same call
// with short timings.
func lead(ctx context.Context, kubeClient kubernetes.Interface, ctrl *queue.Controller[string]) error {
	err := leader.Run(ctx, leader.Config{Client: kubeClient, Namespace: "foo-system", Name: "foo-controller"}, ctrl)
	return err
}

var _ = lead
