package controlplane

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/testenv/binaries"
)

// recordingTB records failures instead of ending the test.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Logf(string, ...any) {}

func (r *recordingTB) Fatal(args ...any) { r.record(fmt.Sprint(args...)) }

func (r *recordingTB) Fatalf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }

func (r *recordingTB) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

func TestSharedGet(t *testing.T) {
	t.Run("outside Run it fails and starts nothing", func(t *testing.T) {
		var s Shared
		rec := &recordingTB{}
		assert.Nil(t, s.Get(rec))
		require.Len(t, rec.failures, 1)
		assert.Contains(t, rec.failures[0], "os.Exit(env.Run(m))")
		assert.Nil(t, s.cp)
	})
	t.Run("a failed start fails every caller with the same error", func(t *testing.T) {
		s := Shared{Options: Options{Binaries: binaries.Options{Dir: t.TempDir()}}}
		s.running.Store(true)
		first, second := &recordingTB{}, &recordingTB{}
		assert.Nil(t, s.Get(first))
		assert.Nil(t, s.Get(second))
		require.Len(t, first.failures, 1)
		assert.Contains(t, first.failures[0], "binaries missing")
		assert.Equal(t, first.failures, second.failures)
	})
}

// A port taken between the choice and the bind (by another test process
// starting a control plane, say) costs one more attempt, not the start.
func TestStartRetriesWhenPortTaken(t *testing.T) {
	// The port's holder answers etcd's health check: only the check that
	// etcd itself listens tells it from the etcd that failed to bind.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	impostor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"health":"true"}`))
	})}
	go func() { _ = impostor.Serve(taken) }()
	defer impostor.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port

	var picks int
	pick := func(n int) ([]int, error) {
		picks++
		ports, err := freePorts(n)
		if picks == 1 {
			ports[0] = takenPort // etcd's client port
		}
		return ports, err
	}
	cp, err := start(t.Context(), Options{}, pick)
	require.NoError(t, err)
	defer cp.Stop()
	assert.Equal(t, 2, picks)
	assert.FileExists(t, cp.path("logs", Etcd+".log.failed"), "the failed attempt's log is kept")
	ready, err := apiReady(t.Context(), cp.admin)
	require.NoError(t, err)
	assert.True(t, ready)
}

func TestOwnsPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	assert.NoError(t, ownsPort(os.Getpid(), port), "this process's listener")
	assert.ErrorContains(t, ownsPort(os.Getpid(), port+1), "nothing listens", "another port")
	assert.ErrorContains(t, ownsPort(1, port), "held by another process", "another process")
	require.NoError(t, l.Close())
	assert.Error(t, ownsPort(os.Getpid(), port), "closed")
}
