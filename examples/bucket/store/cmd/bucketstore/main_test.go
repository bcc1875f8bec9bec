package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// timeout bounds every wait of these tests for something to happen.
const timeout = 10 * time.Second

// started is a run under way.
type started struct {
	url    string        // the base URL of the listening line
	rest   <-chan string // what run writes after that line, once it returns
	done   <-chan error  // what run returns
	cancel context.CancelFunc
	// polling receives when a request of /changes reaches the store.
	polling <-chan struct{}
}

// startRun runs run with args in the background and waits for its
// listening line.
func startRun(t *testing.T, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	polling := make(chan struct{}, 1)
	serve := handler
	handler = func(srv *store.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/changes" {
				select {
				case polling <- struct{}{}:
				default:
				}
			}
			serve(srv).ServeHTTP(w, r)
		})
	}
	t.Cleanup(func() { handler = serve })
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, pw)
		_ = pw.Close()
		done <- err
	}()
	out := bufio.NewReader(pr)
	lineCh := make(chan string, 1)
	go func() {
		line, _ := out.ReadString('\n')
		lineCh <- line
	}()
	var line string
	select {
	case line = <-lineCh:
	case <-time.After(timeout):
		require.FailNow(t, "no listening line")
	}
	url, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "listening on ")
	require.True(t, ok, "the listening line: %q", line)
	rest := make(chan string, 1)
	go func() {
		data, _ := io.ReadAll(out)
		rest <- string(data)
	}()
	return &started{url: url, rest: rest, done: done, cancel: cancel, polling: polling}
}

// wait returns what run returned, failing the test when it does not return
// in time.
func (s *started) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(timeout):
		require.FailNow(t, "run did not return")
		return nil
	}
}

func TestRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "buckets.json")
	s := startRun(t, "--listen", "127.0.0.1:0", "--data", file)
	require.True(t, strings.HasPrefix(s.url, "http://127.0.0.1:"), s.url)
	require.NotEqual(t, "http://127.0.0.1:0", s.url, "the line tells the port taken")

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := store.NewClient(s.url, &http.Client{Transport: tr})
	b, err := c.Put(t.Context(), "photos", store.Spec{Region: "eu-west-1"})
	require.NoError(t, err)
	assert.Equal(t, store.Bucket{Name: "photos", Spec: store.Spec{Region: "eu-west-1"}, Version: 1}, b)

	// A long poll under way when the store stops is answered at once (503),
	// so that the shutdown does not wait for it: run would fail if the
	// shutdown ran out of time.
	polled := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Get(s.url + "/changes?after=1&wait=1m")
		if err != nil {
			polled <- 0
			return
		}
		_ = resp.Body.Close()
		polled <- resp.StatusCode
	}()
	select {
	case <-s.polling:
	case <-time.After(timeout):
		require.FailNow(t, "the long poll did not arrive")
	}

	s.cancel()
	require.NoError(t, s.wait(t), "a clean shutdown")
	assert.Empty(t, <-s.rest, "the listening line is the only output")
	select {
	case code := <-polled:
		assert.Equal(t, http.StatusServiceUnavailable, code, "the long poll's answer")
	case <-time.After(timeout):
		require.FailNow(t, "the long poll was not answered")
	}

	_, err = c.List(t.Context())
	assert.Error(t, err, "the store is down")
	again, err := store.NewServer(file)
	require.NoError(t, err, "the data file is left for the next start")
	again.Close()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"photos"`)
}

func TestRunFailures(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "buckets.json")
	corrupt := filepath.Join(dir, "corrupt.json")
	require.NoError(t, os.WriteFile(corrupt, []byte("not json"), 0o600))
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = busy.Close() }()

	tests := []struct {
		name      string
		args      []string
		stdout    io.Writer
		wantUsage bool
		wantErr   string
	}{
		{name: "no data file", args: []string{"--listen", "127.0.0.1:0"}, wantUsage: true, wantErr: "--data is required"},
		{name: "an argument", args: []string{"--data", file, "extra"}, wantUsage: true, wantErr: "no arguments"},
		{name: "unknown flag", args: []string{"--data", file, "--port", "1"}, wantUsage: true, wantErr: "flag provided but not defined"},
		{name: "help", args: []string{"-h"}, wantUsage: true, wantErr: flag.ErrHelp.Error()},
		{name: "corrupt data file", args: []string{"--listen", "127.0.0.1:0", "--data", corrupt}, wantErr: "corrupt.json"},
		{name: "bad address", args: []string{"--listen", "127.0.0.1:http-ish", "--data", file}, wantErr: "127.0.0.1:http-ish"},
		{name: "address in use", args: []string{"--listen", busy.Addr().String(), "--data", file}, wantErr: "address already in use"},
		{
			name: "stdout closed", args: []string{"--listen", "127.0.0.1:0", "--data", file},
			stdout: failingWriter{}, wantErr: "writing the listening line",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout := tt.stdout
			if stdout == nil {
				stdout = io.Discard
			}
			err := run(t.Context(), tt.args, stdout)
			require.ErrorContains(t, err, tt.wantErr)
			var usage usageError
			assert.Equal(t, tt.wantUsage, errors.As(err, &usage), "a usage error")
		})
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stdout is closed") }
