package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// The operator TestInitOperatorWebhooks makes with apigen init, in the
// namespace init gives it.
const (
	iwName      = "widget-operator"
	iwNamespace = iwName + "-system"
	iwUser      = "system:serviceaccount:" + iwNamespace + ":" + iwName
)

var iwWidgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// TestInitOperatorWebhooks makes a new operator with a validating webhook
// with apigen init -webhooks, applies its kustomization (deploy/, as
// generated) to an API server, runs its binary with its Deployment's
// arguments as its ServiceAccount, and has the API server call the
// webhook through the generated configuration: at the generated Service
// (the API server reaches Services through an HTTP CONNECT proxy of this
// test on a Unix socket, its egress to the cluster network (kube-apiserver
// 1.37 dials a TCP proxy only over TLS), which takes the Service's
// ClusterIP to the operator's address), over TLS verified for the
// Service's host with the CA the operator published into the generated
// configuration. A Widget that the operator's validator refuses is refused
// by the API server, one it admits is stored, and the operator needs no
// permission beyond its kustomization's roles.
func TestInitOperatorWebhooks(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	root, err := repo.Root()
	require.NoError(t, err)
	module := filepath.Join(t.TempDir(), "op")
	require.NoError(t, os.Mkdir(module, 0o755))
	bin := filepath.Join(t.TempDir(), iwName)
	built := make(chan error, 1)
	go func() { built <- initOperator(t, root, module, bin) }()

	proxy := startConnectProxy(t)
	egress := filepath.Join(t.TempDir(), "egress.yaml")
	require.NoError(t, os.WriteFile(egress, []byte(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: `+proxy.addr()+`
`), 0o644))
	cp := controlplane.StartT(t, controlplane.Options{
		Size:      controlplane.APIServerOnly,
		ExtraArgs: map[string][]string{controlplane.KubeAPIServer: {"--egress-selector-config-file=" + egress}},
	})
	require.NoError(t, <-built, "apigen init -webhooks and go build")
	t.Logf("control plane and operator built after %s", time.Since(begin).Round(time.Millisecond))

	kubectl := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := cp.KubectlCommand(t.Context(), args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "kubectl %s:\n%s", strings.Join(args, " "), stderr.String())
		return stdout.String()
	}
	deploy := filepath.Join(module, "deploy")
	kubectl("apply", "-k", deploy)

	ctx := t.Context()
	admin := cp.Config()
	kube, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(admin)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := dyn.Resource(iwWidgets).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		assert.NoError(c, err)
	}, waitTimeout, pollEvery, "the Widget CRD of the kustomization is served")

	// The Service of the kustomization, which the configuration calls: the
	// proxy takes its ClusterIP to the operator.
	var svc struct{ name, clusterIP string }
	for _, o := range decodeObjects(t, "kubectl kustomize", []byte(kubectl("kustomize", deploy))) {
		if o.GetKind() == "Service" {
			s, err := kube.CoreV1().Services(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
			require.NoError(t, err)
			svc.name, svc.clusterIP = o.GetNamespace()+"/"+o.GetName(), s.Spec.ClusterIP
		}
	}
	require.NotEmpty(t, svc.clusterIP, "the kustomization has a Service with a ClusterIP")
	webhookAddr := freeAddress(t)
	proxy.route(net.JoinHostPort(svc.clusterIP, "443"), webhookAddr)

	// The operator, as its Deployment runs it, with the addresses of this
	// machine and a kubeconfig of its ServiceAccount.
	cfg, err := cp.ServiceAccountConfig(ctx, iwNamespace, iwName)
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(kubeconfig, cfg, iwName))
	args := deploymentArgs(t, filepath.Join(deploy, "deployment.yaml"))
	assert.Contains(t, args, "--webhook-cert-secret="+iwNamespace+"/"+iwName+"-webhooks-certs", "the certificate's Secret in the operator's namespace")
	metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
	args = append(withAddresses(t, args, map[string]string{
		"--metrics-bind-address": metricsAddr, "--health-probe-bind-address": healthAddr, "--webhook-bind-address": webhookAddr,
	}), "--kubeconfig="+kubeconfig, "-v=2")
	p := startProcess(t, iwName, bin, args...)
	p.healthURL = "http://" + healthAddr
	relWaitReadyz(t, p)

	widgets := dyn.Resource(iwWidgets).Namespace("default")
	widget := func(name, message string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"message": message},
		}}
	}
	// Refused by the validator once the API server reaches it, over TLS
	// with the CA the operator published.
	var refusal error
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, refusal = widgets.Create(ctx, widget("long", strings.Repeat("x", 65)), metav1.CreateOptions{})
		require.Error(c, refusal, "a Widget with a message of 65 characters is refused")
		assert.True(c, apierrors.IsInvalid(refusal), "refused by the webhook, not for want of reaching it: %v", refusal)
	}, waitTimeout, pollEvery, "the API server calls the operator's webhook")
	assert.Contains(t, refusal.Error(), `admission webhook "validate.widgets.example.com" denied the request`)
	assert.Contains(t, refusal.Error(), "spec.message: Too long")
	_, err = widgets.Get(ctx, "long", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the refused Widget is not stored: %v", err)

	_, err = widgets.Create(ctx, widget("short", "hello"), metav1.CreateOptions{})
	require.NoError(t, err, "a Widget the validator admits is stored")
	assert.Contains(t, proxy.connects(), net.JoinHostPort(svc.clusterIP, "443"), "the API server called the Service %s", svc.name)

	events, err := cp.AuditEvents()
	require.NoError(t, err)
	mine := audit.Select(events, audit.ByUser(iwUser))
	assert.NotEmpty(t, mine, "the audit log holds the operator's requests")
	assert.Empty(t, audit.Lines(audit.Select(mine, audit.ByCode(403))), "the roles of the kustomization allow every request of the operator")
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// initOperator makes a new module in dir as docs/using.md and
// docs/new-api.md say, with go tool apigen init -name widget-operator
// -api example.com/v1/Widget -webhooks, and builds its binary into bin.
func initOperator(t *testing.T, root, dir, bin string) error {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "using.md"))
	if err != nil {
		return err
	}
	_, section, _ := strings.Cut(string(doc), "## From a checkout, before a tagged release")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	if block == nil {
		return errors.New("docs/using.md's section has no sh block")
	}
	setup, _, ok := strings.Cut(strings.ReplaceAll(block[1], "/path/to/ctrlkit", root), "go mod tidy\n")
	if !ok {
		return errors.New("docs/using.md's block has no go mod tidy")
	}
	script := setup + "go mod tidy\n" +
		"go tool apigen init -name " + iwName + " -api example.com/v1/Widget -webhooks\n" +
		"go build -o " + bin + " .\n"
	cmd := exec.CommandContext(t.Context(), "bash", "-euxo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

// deploymentArgs reads the arguments of the container of the Deployment
// in file, as the kubelet expands them in a pod of its namespace.
func deploymentArgs(t *testing.T, file string) []string {
	t.Helper()
	for _, o := range readManifest(t, file) {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		require.NoError(t, err)
		require.Len(t, containers, 1)
		c := containers[0].(map[string]any)
		args, _, err := unstructured.NestedStringSlice(c, "args")
		require.NoError(t, err)
		// As the kubelet runs them in a pod of the Deployment's namespace:
		// $(NAME) of a variable the downward API gives the pod's namespace
		// is expanded.
		env, _, err := unstructured.NestedSlice(c, "env")
		require.NoError(t, err)
		for _, e := range env {
			e, _ := e.(map[string]any)
			if path, _, _ := unstructured.NestedString(e, "valueFrom", "fieldRef", "fieldPath"); path == "metadata.namespace" {
				name, _, _ := unstructured.NestedString(e, "name")
				for i := range args {
					args[i] = strings.ReplaceAll(args[i], "$("+name+")", o.GetNamespace())
				}
			}
		}
		return args
	}
	t.Fatalf("%s has no Deployment", file)
	return nil
}

// withAddresses replaces the value of each flag of addrs in args, which
// must have it.
func withAddresses(t *testing.T, args []string, addrs map[string]string) []string {
	t.Helper()
	out := slices.Clone(args)
	for flag, addr := range addrs {
		i := slices.IndexFunc(out, func(a string) bool { return strings.HasPrefix(a, flag+"=") })
		require.GreaterOrEqual(t, i, 0, "the Deployment's arguments have %s: %q", flag, args)
		out[i] = flag + "=" + addr
	}
	return out
}

// connectProxy is an HTTP CONNECT proxy on a Unix socket that tunnels the
// addresses it is given a route for, and refuses any other.
type connectProxy struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	routes map[string]string // CONNECT address -> dialled address
	seen   []string          // the CONNECT addresses asked for
	conns  map[net.Conn]bool // open, closed when the test ends
	closed bool
}

// startConnectProxy starts a proxy that serves until the test ends.
func startConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	// A short path: a socket's is at most 107 bytes.
	dir, err := os.MkdirTemp("", "egress")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "proxy.sock"))
	require.NoError(t, err)
	p := &connectProxy{ln: ln, routes: map[string]string{}, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		_ = ln.Close()
		p.wg.Wait()
	})
	return p
}

// addr is the path of the proxy's socket.
func (p *connectProxy) addr() string { return p.ln.Addr().String() }

// route tunnels CONNECT requests for from to to.
func (p *connectProxy) route(from, to string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.routes[from] = to
}

// connects returns the addresses CONNECT requests asked for.
func (p *connectProxy) connects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// track keeps c to close it when the test ends; false if it has ended.
func (p *connectProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *connectProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.tunnel(c)
		}()
	}
}

// tunnel answers one CONNECT request on c and copies bytes both ways
// until either side closes.
func (p *connectProxy) tunnel(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.seen = append(p.seen, req.Host)
	to, ok := p.routes[req.Host]
	p.mu.Unlock()
	if req.Method != http.MethodConnect || !ok {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	up, err := net.DialTimeout("tcp", to, 5*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	if !p.track(up) {
		_ = up.Close()
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, br) // what the API server sends, buffered bytes first
		_ = up.Close()
	}()
	_, _ = io.Copy(c, up)
	_ = c.Close()
	<-done
}
