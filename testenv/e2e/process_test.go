package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buildBinary builds ./examples/<example> of the module at root into dir,
// as its own module (its go.mod, not this one's) would build it. With race,
// the race detector is on: a data race then makes the binary exit with
// status 66.
func buildBinary(ctx context.Context, root, dir, example string, race bool) (string, error) {
	bin := filepath.Join(dir, example)
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	pkg := "./examples/" + example
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// binaries are the example binaries this test binary has built, each built
// once and shared by every test that runs it (no test writes to one).
var binaries = struct {
	mu     sync.Mutex
	dir    string // removed by TestMain when the tests are done
	builds map[string]*build
}{builds: map[string]*build{}}

// build is one example binary, ready once done is closed.
type build struct {
	done chan struct{}
	bin  string
	err  error
}

// buildInBackground starts buildBinary, unless an earlier test of this
// binary built the same example, so that the build overlaps with a control
// plane's start-up. The returned function waits for the build, fails the
// test if it failed, and returns the binary. The build does not stop when
// the test that started it ends early: another test may be waiting for it.
func buildInBackground(tb testing.TB, root, example string, race bool) func() string {
	key := fmt.Sprintf("%s race=%t", example, race)
	binaries.mu.Lock()
	b, ok := binaries.builds[key]
	if !ok {
		b = &build{done: make(chan struct{})}
		binaries.builds[key] = b
		var err error
		if binaries.dir == "" {
			binaries.dir, err = os.MkdirTemp("", "ctrlkit-e2e-bin-")
		}
		dir := filepath.Join(binaries.dir, strconv.Itoa(len(binaries.builds)))
		go func() {
			defer close(b.done)
			if err == nil {
				err = os.Mkdir(dir, 0o755)
			}
			if err != nil {
				b.err = fmt.Errorf("a directory for the binaries: %w", err)
				return
			}
			b.bin, b.err = buildBinary(context.Background(), root, dir, example, race)
		}()
	}
	binaries.mu.Unlock()
	return func() string {
		tb.Helper()
		<-b.done
		require.NoError(tb, b.err)
		return b.bin
	}
}

// removeBinaries removes what buildInBackground built, once every build
// has ended.
func removeBinaries() {
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	for _, b := range binaries.builds {
		<-b.done
	}
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is one run of the controller binary.
type process struct {
	name    string
	cmd     *exec.Cmd
	out     *syncBuffer
	done    chan struct{}
	waitErr error // valid once done is closed
	// metricsURL, healthURL and pprofURL are the base URLs of its
	// endpoints.
	metricsURL, healthURL, pprofURL string
	// controller is the "controller" label of its metrics; default
	// foo.ControllerName.
	controller string
}

// startProcess runs bin with args; stdout and stderr are captured together.
// When the test ends the process is killed if it still runs, and a failed
// test prints its output.
func startProcess(t testing.TB, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	// Killed with the test binary if that dies without cleaning up.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	t.Logf("started %s (pid %d): %s %s", name, p.cmd.Process.Pid, filepath.Base(bin), strings.Join(args, " "))
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s (%s):\n%s", name, p.cmd.ProcessState, p.out.String())
		}
	})
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the process to exit and returns its exit
// code; ok is false if it still runs.
func (p *process) wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// handedOut holds the addresses freeAddress returned: the kernel may give
// a port it just released to the next listener on :0, so that two
// processes of one test would be told the same port.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// freeAddress returns a loopback address with a port that was free a moment
// ago and that it has not returned before.
func freeAddress(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
}

// httpGet returns the status code and body of a GET.
func httpGet(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// metricSum adds up the samples of a metric in Prometheus text format whose
// labels include all of the given ones. found is false when no sample
// matched.
func metricSum(text, name string, labels map[string]string) (sum float64, found bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		series, value := line[:sp], line[sp+1:]
		metric, labelText, _ := strings.Cut(series, "{")
		if metric != name {
			continue
		}
		have := parseLabels(strings.TrimSuffix(labelText, "}"))
		match := true
		for k, v := range labels {
			if have[k] != v {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		sum += f
		found = true
	}
	return sum, found
}

// parseLabels reads `a="x",b="y"`; label values here never hold quotes or
// commas.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}
