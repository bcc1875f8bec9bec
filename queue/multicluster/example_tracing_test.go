package multicluster_test

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// A Fleet builds its members' clients from their configs, without the
// tracing transport: with tracing on, give it a constructor that wraps
// them, so that the writes to members are client spans of their reconciles
// and carry the traceparent header (docs/tracing.md).
func ExampleWithClients_tracing() {
	var tp trace.TracerProvider // flags.TracerProvider(), or your own
	traced := multicluster.WithClients(func(_ context.Context, _ string, cfg *rest.Config) (kubernetes.Interface, error) {
		cfg = rest.CopyConfig(cfg)
		tracing.WrapConfig(cfg, tp) // nothing when tp is nil
		return kubernetes.NewForConfig(cfg)
	})
	_ = traced // an option of multicluster.New
	// Output:
}
