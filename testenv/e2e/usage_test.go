package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux architecture Go supports.
const userHZ = 100

// processUsage is what the kernel says about a running process.
type processUsage struct {
	// cpu is user plus system time since the process started.
	cpu time.Duration
	// peakRSS is the most resident memory it has had (VmHWM), in bytes.
	peakRSS int64
}

// readUsage reads /proc/<pid>/stat and /proc/<pid>/status.
func readUsage(pid int) (processUsage, error) {
	var u processUsage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis start with field 3 (state). utime and stime are
	// fields 14 and 15.
	end := strings.LastIndexByte(string(stat), ')')
	if end < 0 {
		return u, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return u, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	u.cpu = time.Duration(ticks) * time.Second / userHZ

	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return u, fmt.Errorf("/proc/%d/status VmHWM: %w", pid, err)
			}
			u.peakRSS = kb << 10
			return u, nil
		}
	}
	return u, fmt.Errorf("/proc/%d/status has no VmHWM: %v", pid, sc.Err())
}

// liveHeap asks a Go process serving net/http/pprof at base for its heap
// after a garbage collection: the bytes of live objects (HeapAlloc right
// after the collection).
func liveHeap(ctx context.Context, base string) (int64, error) {
	code, body, err := httpGet(ctx, base+"/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("heap profile: HTTP %d", code)
	}
	return parseHeapAlloc(body)
}

// parseHeapAlloc finds "# HeapAlloc = N" in a debug=1 heap profile.
func parseHeapAlloc(profile string) (int64, error) {
	for line := range strings.Lines(profile) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "# HeapAlloc = "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no HeapAlloc in the heap profile")
}

// profiler saves CPU profiles of a controller and of kube-apiserver taken
// at the same time.
type profiler struct {
	dir     string
	seconds int
	kube    kubernetes.Interface
}

// start begins both profiles; wait returns when both are written to dir as
// <name>-controller.pprof and <name>-kube-apiserver.pprof, with the errors
// of either.
func (p *profiler) start(ctx context.Context, name, controllerPprof string) (wait func() error) {
	errs := make(chan error, 2)
	go func() {
		errs <- p.save(filepath.Join(p.dir, name+"-controller.pprof"), func() (io.ReadCloser, error) {
			return open(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", controllerPprof, p.seconds))
		})
	}()
	go func() {
		errs <- p.save(filepath.Join(p.dir, name+"-kube-apiserver.pprof"), func() (io.ReadCloser, error) {
			return p.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", strconv.Itoa(p.seconds)).Timeout(time.Duration(p.seconds+60) * time.Second).Stream(ctx)
		})
	}()
	return func() error { return errors.Join(<-errs, <-errs) }
}

// saveHeap writes the controller's live heap profile to dir as
// <name>-controller-heap.pprof.
func (p *profiler) saveHeap(ctx context.Context, name, controllerPprof string) error {
	return p.save(filepath.Join(p.dir, name+"-controller-heap.pprof"), func() (io.ReadCloser, error) {
		return open(ctx, controllerPprof+"/debug/pprof/heap?gc=1")
	})
}

// open returns the body of a GET of url that answered 200.
func open(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return resp.Body, nil
}

func (p *profiler) save(path string, open func() (io.ReadCloser, error)) error {
	body, err := open()
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, data, 0o644)
}
