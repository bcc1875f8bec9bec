// Command bucket runs an operator of buckets in a storage service outside
// the cluster: each Bucket (storage.ctrlkit.io/v1, cluster-scoped; also
// served as v1alpha1 by the operator's conversion webhook) declares a
// bucket of its name, which the operator creates there through the
// service's HTTP API, keeps as the spec says (the service's change
// notifications and a periodic check wake it when the bucket is changed or
// removed behind its back), and deletes before the Bucket goes unless its
// deletionPolicy is Retain, holding a finalizer until then. The service
// records the Bucket's UID as the owner of the bucket the operator
// creates; a bucket of the name that the operator did not create for that
// Bucket is refused (Ready=False, BucketExists), never written or deleted.
// The service is examples/bucket/store/cmd/bucketstore. The operator also
// serves the API's webhooks: conversion from and to v1alpha1, defaults
// (the region, the deletion policy) and validation, with a certificate it
// issues itself (--webhook-cert-secret) or one mounted in
// --webhook-cert-dir.
//
//	go run ./examples/bucket/store/cmd/bucketstore --data /tmp/buckets.json &
//	go run ./examples/bucket --kubeconfig ~/.kube/config --store-url http://127.0.0.1:8090 \
//		--webhook-bind-address 127.0.0.1:9443 --webhook-cert-secret bucket-system/bucket-webhook-certs --webhook-cert-hosts 127.0.0.1
//
// (The webhooks must be reachable by the API server at 127.0.0.1:9443: see
// README.md beside this file, which says how, and how to deploy it.)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/events"
	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// Leader election in the operator's namespace, added to the roles generated
// into deploy/role.yaml.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=bucket-system,resources=leases,verbs=get;create;update

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// options are the command-line flags.
type options struct {
	operator.Flags
	storeURL string
	resync   time.Duration
	workers  int
	// The webhooks' settings.
	defaultRegion, regions string
}

// bindFlags registers the flags on fs.
func bindFlags(fs *flag.FlagSet) *options {
	o := &options{Flags: operator.Flags{LeaderElectID: "bucket-operator", MetricsAddr: ":8080", ProbeAddr: ":8081",
		WebhookCertHosts: webhookCertHosts, WebhookCABundles: webhookCABundles}}
	o.Bind(fs)
	fs.StringVar(&o.storeURL, "store-url", "http://127.0.0.1:8090", "Base URL of the storage service's HTTP API.")
	fs.DurationVar(&o.resync, "resync", time.Minute, "How often every Bucket is checked against the storage service, behind its notifications.")
	fs.IntVar(&o.workers, "workers", 2, "Number of Buckets reconciled at once.")
	fs.StringVar(&o.defaultRegion, "default-region", "", "Region given to a Bucket created without one; without it, such a Bucket is refused.")
	fs.StringVar(&o.regions, "regions", "", "Comma-separated regions a Bucket may name; any if empty.")
	return o
}

// run runs the operator with args until SIGINT or SIGTERM and returns the
// process exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("bucket", flag.ContinueOnError)
	o := bindFlags(fs)
	return o.Main(fs, args, stderr, o.runOperator, func() error {
		if u, err := url.Parse(o.storeURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--store-url must be an http or https URL, got %q", o.storeURL)
		}
		if o.workers < 1 || o.resync <= 0 {
			return fmt.Errorf("--workers and --resync must be positive, got %d and %s", o.workers, o.resync)
		}
		if o.defaultRegion != "" && o.regions != "" && !slices.Contains(list(o.regions), o.defaultRegion) {
			return fmt.Errorf("--default-region %s is not one of --regions %s", o.defaultRegion, o.regions)
		}
		return nil
	})
}

// runOperator connects to the cluster and runs the Bucket controller with
// its informer, leader election and endpoints.
func (o *options) runOperator(ctx context.Context) error {
	cfg, err := o.RESTConfig("ctrlkit-bucket")
	if err != nil {
		return err
	}
	if err := operator.CheckServed(cfg, storagev1.SchemeGroupVersion); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	recorder, err := events.NewRecorder(ctx, kube, "bucket-operator", events.WithAddToScheme(storagev1.AddToScheme))
	if err != nil {
		return err
	}
	factory := operator.Informers(&o.Flags, func(transform cache.TransformFunc) externalversions.SharedInformerFactory {
		return externalversions.NewSharedInformerFactoryWithOptions(client, 0, externalversions.WithTransform(transform))
	})
	ctrl, err := newController(ctx, store.NewClient(o.storeURL, nil), client, factory.Storage().V1().Buckets(), recorder, o.resync,
		append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)
	if err != nil {
		return err
	}
	handlers, err := bucketWebhooks{defaultRegion: o.defaultRegion, regions: list(o.regions)}.handlers()
	if err != nil {
		return err
	}
	webhooks, err := o.Webhooks(cfg, handlers...)
	if err != nil {
		return err
	}
	return operator.Run(ctx, append(o.Options(kube), operator.WithWebhooks(webhooks), operator.WithControllers(ctrl))...)
}

// list splits a comma-separated flag, dropping empty entries.
func list(flag string) []string {
	return slices.DeleteFunc(strings.Split(flag, ","), func(s string) bool { return s == "" })
}
