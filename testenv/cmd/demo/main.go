// Command demo shows the Foo controller at work on a real control plane, in
// one command from a fresh checkout (`make demo` runs it from the repository
// root):
//
//  1. builds the control-plane binaries that are missing (with progress),
//  2. starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler
//     and kwok on 127.0.0.1 and installs the Foo CRD,
//  3. builds and starts the examples/foo controller binary,
//  4. applies examples/foo/example-foo.yaml,
//  5. prints the Foo and its Deployment whenever they change,
//
// and keeps running until Ctrl-C, then stops everything it started. With
// DEMO_ONCE=1 it stops, and exits 0, as soon as the Foo is Ready.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/testenv/binaries"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

var fooResource = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}

func main() {
	once := flag.Bool("once", os.Getenv("DEMO_ONCE") == "1", "exit 0 as soon as the Foo is Ready (default from DEMO_ONCE=1)")
	timeout := flag.Duration("ready-timeout", 5*time.Minute, "with --once: how long the Foo may take to become Ready")
	flag.Parse()
	// The components' own logs go to files; keep this command's output for the story.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *once, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

func run(ctx context.Context, once bool, readyTimeout time.Duration) (err error) {
	root, err := repo.Root()
	if err != nil {
		return err
	}

	step("Checking the control-plane binaries (the first build takes several minutes)")
	if _, err := binaries.Ensure(ctx, binaries.Options{Progress: os.Stdout}); err != nil {
		return err
	}

	step("Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on 127.0.0.1")
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Size:  controlplane.Full,
		CRDs:  []string{filepath.Join(root, "foo", "crd")},
		Users: []controlplane.User{{Name: "foo-controller", Groups: []string{"system:masters"}}},
	})
	if err != nil {
		return err
	}
	defer func() {
		step("Stopping the control plane")
		if stopErr := cp.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "\nLast lines of the component logs:\n")
			cp.DumpLogs(os.Stderr, 20)
		}
	}()
	fmt.Printf("    ready in %s; state and logs in %s\n", cp.StartupDuration().Round(100*time.Millisecond), cp.StateDir())
	fmt.Printf("    try: %s\n", cp.KubectlCommand(ctx, "get", "foos,deployments,pods"))
	step("Installed the Foo CRD (foo/crd/samplecontroller.k8s.io_foos.yaml)")

	step("Building and starting the controller (examples/foo)")
	bin := filepath.Join(cp.StateDir(), "foo-controller")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/foo")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building examples/foo: %w", err)
	}
	ctrlCfg, err := cp.UserConfig("foo-controller")
	if err != nil {
		return err
	}
	ctrlKubeconfig := filepath.Join(cp.StateDir(), "foo-controller.kubeconfig")
	if err := controlplane.WriteKubeconfig(ctrlKubeconfig, ctrlCfg, "foo-controller"); err != nil {
		return err
	}
	healthAddr, err := freeAddr()
	if err != nil {
		return err
	}
	logPath := filepath.Join(cp.LogDir(), "foo-controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl := exec.Command(bin, "--kubeconfig", ctrlKubeconfig, "--metrics-bind-address=0",
		"--health-probe-bind-address", healthAddr, "--resync=1m")
	ctrl.Stdout, ctrl.Stderr = logFile, logFile
	ctrl.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := ctrl.Start(); err != nil {
		return fmt.Errorf("starting the controller: %w", err)
	}
	ctrlExited := make(chan error, 1)
	go func() { ctrlExited <- ctrl.Wait() }()
	defer func() {
		step("Stopping the controller (SIGTERM, graceful)")
		_ = ctrl.Process.Signal(syscall.SIGTERM)
		select {
		case <-ctrlExited:
		case <-time.After(40 * time.Second):
			_ = syscall.Kill(-ctrl.Process.Pid, syscall.SIGKILL)
			<-ctrlExited
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "\nLast lines of the controller log (%s):\n%s\n", logPath, tail(logPath, 20))
		}
	}()
	fmt.Printf("    pid %d, logs in %s, health on http://%s/readyz\n", ctrl.Process.Pid, logPath, healthAddr)

	cfg := cp.Config()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	step("Applying examples/foo/example-foo.yaml")
	fooObj, err := readObject(filepath.Join(root, "examples", "foo", "example-foo.yaml"))
	if err != nil {
		return err
	}
	ns := fooObj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	if _, err := dyn.Resource(fooResource).Namespace(ns).Create(ctx, fooObj, metav1.CreateOptions{FieldManager: "demo"}); err != nil {
		return fmt.Errorf("creating the example Foo: %w", err)
	}

	if once {
		step("Watching until the Foo is Ready (DEMO_ONCE=1)")
	} else {
		step("Watching the Foo and its Deployment; Ctrl-C stops and cleans up")
	}
	deadline := time.Now().Add(readyTimeout)
	var last string
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		line, ready, err := describe(ctx, dyn, kube, ns, fooObj.GetName())
		if err != nil && ctx.Err() == nil {
			line = "error: " + err.Error()
		}
		if line != last {
			fmt.Printf("    %s  %s\n", time.Now().Format("15:04:05"), line)
			last = line
		}
		if once && ready {
			step("The Foo is Ready")
			return nil
		}
		if once && time.Now().After(deadline) {
			return fmt.Errorf("the Foo was not Ready within %s", readyTimeout)
		}
		select {
		case <-ctx.Done():
			fmt.Println()
			if once {
				return errors.New("interrupted before the Foo was Ready")
			}
			return nil
		case exitErr := <-ctrlExited:
			ctrlExited <- exitErr
			return fmt.Errorf("the controller exited: %v", exitErr)
		case <-ticker.C:
		}
	}
}

// describe renders the Foo and its Deployment on one line, and reports
// whether the Foo is Ready.
func describe(ctx context.Context, dyn dynamic.Interface, kube kubernetes.Interface, ns, name string) (string, bool, error) {
	foo, err := dyn.Resource(fooResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", false, err
	}
	desired, _, _ := unstructured.NestedInt64(foo.Object, "spec", "replicas")
	available, _, _ := unstructured.NestedInt64(foo.Object, "status", "availableReplicas")
	deployName, _, _ := unstructured.NestedString(foo.Object, "spec", "deploymentName")
	readyStatus, reason := "-", ""
	conds, _, _ := unstructured.NestedSlice(foo.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Ready" {
			readyStatus, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
		}
	}
	line := fmt.Sprintf("foo/%s ready=%s(%s) available=%d/%d", name, readyStatus, reason, available, desired)
	var d *appsv1.Deployment
	d, err = kube.AppsV1().Deployments(ns).Get(ctx, deployName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		line += fmt.Sprintf(" | deployment/%s not created yet", deployName)
	case err != nil:
		return "", false, err
	default:
		owner := "-"
		if ref := metav1.GetControllerOf(d); ref != nil {
			owner = ref.Kind + "/" + ref.Name
		}
		line += fmt.Sprintf(" | deployment/%s controlled-by=%s ready=%d/%d available=%d",
			d.Name, owner, d.Status.ReadyReplicas, *d.Spec.Replicas, d.Status.AvailableReplicas)
	}
	return line, readyStatus == "True", nil
}

func readObject(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return obj, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
