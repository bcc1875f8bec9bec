// Command cluster runs a full test control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok with one fake node), with
// the Foo CRD installed, in the background, for trying things by hand. Run it from testenv:
//
//	go run ./cmd/cluster up      # builds missing binaries, starts, prints the kubeconfig path
//	go run ./cmd/cluster status  # prints the kubeconfig path if running
//	go run ./cmd/cluster down    # stops every process it started
//
// The state (kubeconfig, logs, audit log, etcd data) lives in
// testenv/.state/cluster, or in --dir / $CTRLKIT_CLUSTER_DIR. The
// kubeconfig path goes to standard output, everything else to standard error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/testenv/binaries"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// EnvDir overrides the default state directory.
const EnvDir = "CTRLKIT_CLUSTER_DIR"

// Files in the state directory.
const (
	pidFile   = "cluster.pid"  // pid of the serve process
	pidsFile  = "components"   // "name pid" per component
	readyFile = "ready"        // kubeconfig path, once ready
	errorFile = "error"        // start-up error
	logFile   = "cluster.log"  // serve process output
	cpDir     = "controlplane" // control plane state
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", os.Getenv(EnvDir), "state directory (default testenv/.state/cluster)")
	timeout := fs.Duration("timeout", 3*time.Minute, "up: how long to wait for the control plane, binaries excluded")
	_ = fs.Parse(os.Args[2:])
	if *dir == "" {
		src, err := repo.TestenvDir()
		if err != nil {
			fail(err)
		}
		*dir = filepath.Join(src, ".state", "cluster")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "up":
		err = up(abs, *timeout)
	case "down":
		if err = stopAll(abs); err == nil {
			fmt.Fprintln(os.Stderr, "cluster stopped")
		}
	case "status":
		err = status(abs)
	case "serve":
		err = serve(abs, *timeout)
	default:
		usage()
	}
	if err != nil {
		fail(err)
	}
}

// printTry shows how to reach the cluster with the kubectl built beside
// the control-plane binaries: one command, and the environment for a shell.
func printTry(kubectl, kubeconfig string) {
	fmt.Fprintf(os.Stderr, "  try: %s --kubeconfig %s get foos,deployments,pods\n", kubectl, kubeconfig)
	fmt.Fprintf(os.Stderr, "  or:  export KUBECONFIG=%s PATH=%s:$PATH\n", kubeconfig, filepath.Dir(kubectl))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cluster up|down|status [--dir DIR] [--timeout D]")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}

// up builds what is missing, starts "serve" detached from this process and
// waits until it reports ready or failed.
func up(dir string, timeout time.Duration) error {
	if pid, ok := running(dir); ok {
		kubeconfig, _ := os.ReadFile(filepath.Join(dir, readyFile))
		fmt.Fprintf(os.Stderr, "cluster already running (pid %d)\n", pid)
		if set, err := binaries.Locate(binaries.Options{}); err == nil {
			printTry(set.Kubectl, strings.TrimSpace(string(kubeconfig)))
		}
		fmt.Println(strings.TrimSpace(string(kubeconfig)))
		return nil
	}
	// Leftovers of a cluster that died without "down".
	if err := stopAll(dir); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	set, err := binaries.Ensure(ctx, binaries.Options{})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cleaning %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(dir, logFile))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(exe, "serve", "--dir", dir, "--timeout", timeout.String())
	cmd.Stdout, cmd.Stderr = log, log
	// A session of its own: the cluster outlives this command and the
	// terminal's Ctrl-C.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the cluster: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Fprintf(os.Stderr, "starting the cluster (pid %d, log %s) ...\n", cmd.Process.Pid, filepath.Join(dir, logFile))

	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			msg, _ := os.ReadFile(filepath.Join(dir, errorFile))
			return fmt.Errorf("the cluster exited during start-up (%v): %s", err, msg)
		case <-ctx.Done():
			_ = stopAll(dir)
			return ctx.Err()
		case <-tick.C:
		}
		if msg, err := os.ReadFile(filepath.Join(dir, errorFile)); err == nil {
			<-exited
			return fmt.Errorf("the cluster failed to start: %s", msg)
		}
		if kubeconfig, err := os.ReadFile(filepath.Join(dir, readyFile)); err == nil {
			fmt.Fprintf(os.Stderr, "cluster ready in %s; stop it with `make cluster-down`\n", time.Since(start).Round(100*time.Millisecond))
			printTry(set.Kubectl, strings.TrimSpace(string(kubeconfig)))
			fmt.Println(strings.TrimSpace(string(kubeconfig)))
			return nil
		}
	}
}

// serve runs the control plane in the foreground until SIGTERM or SIGINT.
func serve(dir string, timeout time.Duration) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "1")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())

	// The cluster is for trying the Foo controller: install its CRD.
	var crdDirs []string
	if src, err := repo.TestenvDir(); err == nil {
		crdDirs = append(crdDirs, filepath.Join(src, "..", "foo", "crd"))
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Size:         controlplane.Full,
		StateDir:     filepath.Join(dir, cpDir),
		StartTimeout: timeout,
		CRDs:         crdDirs,
	})
	if err != nil {
		_ = os.WriteFile(filepath.Join(dir, errorFile), []byte(err.Error()+"\n"), 0o644)
		_ = os.Remove(filepath.Join(dir, pidFile))
		return err
	}
	var pids strings.Builder
	for name, pid := range cp.Pids() {
		fmt.Fprintf(&pids, "%s %d\n", name, pid)
	}
	if err := os.WriteFile(filepath.Join(dir, pidsFile), []byte(pids.String()), 0o644); err != nil {
		_ = cp.Stop()
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, readyFile), []byte(cp.KubeconfigPath()+"\n"), 0o644); err != nil {
		_ = cp.Stop()
		return err
	}
	klog.InfoS("Cluster ready", "kubeconfig", cp.KubeconfigPath(), "startup", cp.StartupDuration())
	<-ctx.Done()
	klog.InfoS("Stopping cluster")
	err = cp.Stop()
	_ = os.Remove(filepath.Join(dir, readyFile))
	_ = os.Remove(filepath.Join(dir, pidsFile))
	_ = os.Remove(filepath.Join(dir, pidFile))
	klog.InfoS("Cluster stopped")
	klog.Flush()
	return err
}

// stopAll stops the serve process, which stops its components; any component
// still alive afterwards (serve was killed, say) is killed by process group.
// It is a no-op when nothing runs.
func stopAll(dir string) error {
	var left []string
	if pid, ok := running(dir); ok {
		fmt.Fprintf(os.Stderr, "stopping the cluster (pid %d) ...\n", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, 60*time.Second) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			waitGone(pid, 5*time.Second)
		}
	}
	for name, pid := range componentPids(dir) {
		if ours(pid, dir) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			if !waitGone(pid, 5*time.Second) {
				left = append(left, fmt.Sprintf("%s (pid %d)", name, pid))
			}
		}
	}
	if len(left) > 0 {
		sort.Strings(left)
		return fmt.Errorf("processes still running: %s", strings.Join(left, ", "))
	}
	for _, f := range []string{pidFile, pidsFile, readyFile} {
		_ = os.Remove(filepath.Join(dir, f))
	}
	return nil
}

func status(dir string) error {
	pid, ok := running(dir)
	if !ok {
		return errors.New("no cluster running")
	}
	kubeconfig, err := os.ReadFile(filepath.Join(dir, readyFile))
	if err != nil {
		return fmt.Errorf("cluster (pid %d) is starting", pid)
	}
	fmt.Fprintf(os.Stderr, "cluster running (pid %d)\n", pid)
	fmt.Println(strings.TrimSpace(string(kubeconfig)))
	return nil
}

// running returns the pid of the serve process if it is alive.
func running(dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, ours(pid, dir)
}

func componentPids(dir string) map[string]int {
	out := map[string]int{}
	data, err := os.ReadFile(filepath.Join(dir, pidsFile))
	if err != nil {
		return out
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			if pid, err := strconv.Atoi(f[1]); err == nil && pid > 0 {
				out[f[0]] = pid
			}
		}
	}
	return out
}

// ours reports whether pid is alive and was started for this state
// directory: every process started here names the directory on its command
// line, which guards against a recycled pid.
func ours(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return false // gone, or a zombie
	}
	return strings.Contains(string(cmdline), dir)
}

func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(cmdline) == 0 {
			return true // zombie: exited, waiting to be reaped by its parent
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}
