package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeKubeconfig writes a kubeconfig pointing at server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + `
users:
- name: u
  user:
    token: secret
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// closedAddress returns a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestStartupFailures(t *testing.T) {
	// An API server that serves discovery but not the Foo group version.
	noCRD := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer noCRD.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
	}))
	defer denied.Close()

	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantMsg  string
	}{
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantCode: 2, wantMsg: "flag provided but not defined"},
		{name: "bad workers", args: []string{"--workers=0"}, wantCode: 2, wantMsg: "--workers must be at least 1"},
		{name: "bad bind address", args: []string{"--metrics-bind-address=8080"}, wantCode: 2, wantMsg: "--metrics-bind-address"},
		{name: "bad lease timing", args: []string{"--leader-elect", "--leader-elect-lease-duration=1s"}, wantCode: 2, wantMsg: "lease duration"},
		{name: "missing kubeconfig file", args: []string{"--kubeconfig=/nonexistent/kubeconfig"}, wantCode: 1, wantMsg: "loading --kubeconfig /nonexistent/kubeconfig"},
		{
			name:     "unreachable cluster",
			args:     []string{"--kubeconfig=" + writeKubeconfig(t, "http://"+closedAddress(t)), "--metrics-bind-address=0", "--health-probe-bind-address=0"},
			wantCode: 1, wantMsg: "cannot reach the API server",
		},
		{
			name:     "CRD not installed",
			args:     []string{"--kubeconfig=" + writeKubeconfig(t, noCRD.URL), "--metrics-bind-address=0", "--health-probe-bind-address=0"},
			wantCode: 1, wantMsg: "does not serve samplecontroller.k8s.io/v1alpha1 (is its CustomResourceDefinition installed?): not served; install the Foo CRD with: kubectl apply -f foo/crd/samplecontroller.k8s.io_foos.yaml",
		},
		{
			name:     "KUBECONFIG is used without the flag",
			env:      map[string]string{"KUBECONFIG": writeKubeconfig(t, noCRD.URL)},
			args:     []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"},
			wantCode: 1, wantMsg: "install the Foo CRD with",
		},
		{
			name:     "--master overrides the kubeconfig server",
			args:     []string{"--kubeconfig=" + writeKubeconfig(t, "http://"+closedAddress(t)), "--master=" + noCRD.URL, "--metrics-bind-address=0", "--health-probe-bind-address=0"},
			wantCode: 1, wantMsg: "install the Foo CRD with",
		},
		{
			name:     "credentials refused",
			args:     []string{"--kubeconfig=" + writeKubeconfig(t, denied.URL), "--metrics-bind-address=0", "--health-probe-bind-address=0"},
			wantCode: 1, wantMsg: "refused the credentials",
		},
		{
			name:     "no configuration anywhere",
			env:      map[string]string{"KUBECONFIG": "", "HOME": t.TempDir(), "KUBERNETES_SERVICE_HOST": ""},
			args:     []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"},
			wantCode: 1, wantMsg: "no cluster configuration",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stderr bytes.Buffer
			code := run(tt.args, &stderr)
			assert.Equal(t, tt.wantCode, code, stderr.String())
			assert.Contains(t, stderr.String(), tt.wantMsg)
			assert.NotContains(t, stderr.String(), "goroutine ", "no stack trace")
		})
	}
}

func TestHelp(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 0, run([]string{"--help"}, &stderr))
	for _, f := range []string{"-kubeconfig", "-master", "-workers", "-resync", "-kube-api-qps", "-kube-api-burst",
		"-leader-elect", "-leader-elect-namespace", "-leader-elect-id", "-metrics-bind-address", "-health-probe-bind-address", "-v"} {
		assert.True(t, strings.Contains(stderr.String(), "  "+f+" ") || strings.Contains(stderr.String(), "  "+f+"\n"), "flag %s documented", f)
	}
}
