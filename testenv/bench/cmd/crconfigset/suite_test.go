package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testenv/bench/cmd/internal/envtestbin"
)

var (
	ctx    context.Context
	cancel context.CancelFunc
	// The management cluster, and the member clusters by name.
	mgmtEnv     *envtest.Environment
	cfg         *rest.Config
	k8sClient   client.Client
	memberEnvs  = map[string]*envtest.Environment{}
	members     = map[string]client.Client{}
	kubeconfigs = map[string][]byte{}
	scheme      = runtime.NewScheme()
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

// baseline is what ran before the suite: anything else that still runs
// after it leaked.
var baseline goleak.Option

var _ = BeforeSuite(func() {
	baseline = goleak.IgnoreCurrent()
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second) // a loaded machine needs the margin
	ctx, cancel = context.WithCancel(context.TODO())
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(fleetv1alpha1.AddToScheme(scheme)).To(Succeed())
	assets, err := envtestbin.Dir()
	Expect(err).NotTo(HaveOccurred())
	mgmtEnv = &envtest.Environment{BinaryAssetsDirectory: assets, ErrorIfCRDPathMissing: true,
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "..", "examples", "configset", "deploy", "crd")}}
	cfg, err = mgmtEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{"east", "west"} {
		env := &envtest.Environment{BinaryAssetsDirectory: assets}
		memberEnvs[name] = env
		memberCfg, err := env.Start()
		Expect(err).NotTo(HaveOccurred())
		members[name], err = client.New(memberCfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		user, err := env.AddUser(envtest.User{Name: "fleet", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kubeconfigs[name], err = user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
	}
})

var _ = AfterSuite(func() {
	By("tearing down the test environments")
	cancel()
	for _, env := range memberEnvs {
		Expect(env.Stop()).To(Succeed())
	}
	Expect(mgmtEnv.Stop()).To(Succeed())
	Expect(goleak.Find(baseline)).To(Succeed())
})
