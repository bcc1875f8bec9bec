package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ctrlkit/ctrlkit/testenv/bench/cmd/internal/envtestbin"
)

var (
	ctx       context.Context
	cancel    context.CancelFunc
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	// webhooksStopped is closed when the manager serving the webhooks stops.
	webhooksStopped chan struct{}
)

// The webhooks' settings in the suite, as --default-region and --regions.
const defaultRegion = "eu-west-1"

var regions = []string{"eu-west-1", "us-east-1", "ap-south-1"}

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second) // a loaded machine needs the margin
	ctx, cancel = context.WithCancel(context.TODO())
	assets, err := envtestbin.Dir()
	Expect(err).NotTo(HaveOccurred())
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "..", "examples", "bucket", "deploy", "crd")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		// The webhook configurations the operator is deployed with; envtest
		// points them, and the CRD's conversion, at a local server. The API
		// types have no conversion methods for envtest to find in the
		// scheme: the CRD's conversion is set regardless.
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:                   []string{filepath.Join("..", "..", "..", "..", "examples", "bucket", "deploy", "webhook.yaml")},
			IgnoreSchemeConvertible: true,
		},
	}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient).NotTo(BeNil())

	By("serving the webhooks for the whole suite: every write of a Bucket goes through them")
	hooks := testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: hooks.LocalServingHost, Port: hooks.LocalServingPort, CertDir: hooks.LocalServingCertDir})})
	Expect(err).NotTo(HaveOccurred())
	Expect(SetupBucketWebhookWithManager(mgr, defaultRegion, regions)).To(Succeed())
	webhooksStopped = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(webhooksStopped)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Eventually(func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }).Should(Succeed())
})

var _ = AfterSuite(func() {
	By("tearing down the test environment")
	cancel()
	if webhooksStopped != nil {
		Eventually(webhooksStopped).Should(BeClosed())
	}
	Expect(testEnv.Stop()).To(Succeed())
})
