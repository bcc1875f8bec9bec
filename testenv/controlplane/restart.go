package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Kill ends a component the hard way, the way a crash or an OOM kill would:
// SIGKILL to its process group, no graceful shutdown, requests in flight cut
// off. It returns once the process has been reaped. name is one of the
// component constants (Etcd, KubeAPIServer, ...). Killing a component that
// has already exited is not an error.
//
// After killing KubeAPIServer, Kill ends the audit log with a newline if the
// dying server left half a line, so that the first event of a restarted
// server stays readable.
func (cp *ControlPlane) Kill(name string) error {
	p, err := cp.component(name)
	if err != nil {
		return err
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.done
	if name == KubeAPIServer {
		if err := terminateLastLine(cp.AuditLogPath()); err != nil {
			return fmt.Errorf("repairing the audit log after killing %s: %w", name, err)
		}
	}
	return nil
}

// Restart starts a component again with the command line and environment
// it was started with: the same ports, certificates, tokens and state (an
// API server restarted this way serves the same data, from the same etcd,
// to clients that keep their rest.Config). A component that still runs is
// killed first, as by Kill. For KubeAPIServer Restart then waits until
// /readyz answers ok, for Etcd until /health does; other components are
// only started. ctx bounds the wait. The new process replaces the old one
// in Pids, in the logs (appended to the same file) and for Stop. Restart
// fails after Stop.
func (cp *ControlPlane) Restart(ctx context.Context, name string) error {
	old, err := cp.component(name)
	if err != nil {
		return err
	}
	if !old.exited() {
		if err := cp.Kill(name); err != nil {
			return err
		}
	}
	args := append([]string(nil), old.cmd.Args[1:]...)
	p, err := startProcess(name, old.cmd.Path, args, old.cmd.Env, filepath.Dir(old.logPath))
	if err != nil {
		return err
	}
	cp.procsMu.Lock()
	if cp.stopped {
		cp.procsMu.Unlock()
		p.stop(0)
		return fmt.Errorf("restarting %s: the control plane was stopped", name)
	}
	for i := range cp.procs {
		if cp.procs[i] == old {
			cp.procs[i] = p
		}
	}
	cp.procsMu.Unlock()

	switch name {
	case KubeAPIServer:
		return waitFor(ctx, "the restarted kube-apiserver to be ready", cp.processes(), func(ctx context.Context) (bool, error) {
			return apiReady(ctx, cp.admin)
		})
	case Etcd:
		url := flagValue(args, "--listen-client-urls")
		if url == "" {
			return errors.New("restarting etcd: no --listen-client-urls")
		}
		return waitFor(ctx, "the restarted etcd to be healthy", []*process{p}, func(ctx context.Context) (bool, error) {
			return httpOK(ctx, url+"/health")
		})
	}
	return nil
}

// RestartAPIServer kills kube-apiserver with SIGKILL, starts it again on the
// same port with the same etcd, and waits until it is ready. It returns how
// long the API was unavailable, from the kill until /readyz answered ok.
//
// Like any kube-apiserver starting up, the new one accepts connections
// before it is ready: clients that do not wait for /readyz may meanwhile
// get errors, including 403 Forbidden while its RBAC caches are still
// empty.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) (time.Duration, error) {
	begin := time.Now()
	if err := cp.Kill(KubeAPIServer); err != nil {
		return 0, err
	}
	if err := cp.Restart(ctx, KubeAPIServer); err != nil {
		return time.Since(begin), err
	}
	return time.Since(begin), nil
}

// component returns the newest process of a component.
func (cp *ControlPlane) component(name string) (*process, error) {
	procs := cp.processes()
	for i := len(procs) - 1; i >= 0; i-- {
		if procs[i].name == name {
			return procs[i], nil
		}
	}
	return nil, fmt.Errorf("no component %q in this control plane", name)
}

// processes returns a snapshot of the running components.
func (cp *ControlPlane) processes() []*process {
	cp.procsMu.Lock()
	defer cp.procsMu.Unlock()
	return append([]*process(nil), cp.procs...)
}

// stopProcesses marks the control plane stopped, so Restart starts nothing
// more, and returns the components to stop.
func (cp *ControlPlane) stopProcesses() []*process {
	cp.procsMu.Lock()
	defer cp.procsMu.Unlock()
	cp.stopped = true
	return append([]*process(nil), cp.procs...)
}

// flagValue returns the value of --name=value in args, or "".
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// terminateLastLine appends a newline to the file at path if it is not
// empty and does not end with one. A missing file is fine.
func terminateLastLine(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() == 0 {
		return nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, info.Size()-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	_, err = f.WriteAt([]byte{'\n'}, info.Size())
	return err
}
