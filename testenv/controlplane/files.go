package controlplane

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/csv"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// auditPolicy records every request at Metadata level, once it completes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
- RequestReceived
rules:
- level: Metadata
`

// writeServiceAccountKeys writes an RSA key pair for signing and verifying
// service account tokens.
func writeServiceAccountKeys(privPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating service account key: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding service account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding service account key: %w", err)
	}
	if err := os.WriteFile(privPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), 0o600); err != nil {
		return fmt.Errorf("writing service account key: %w", err)
	}
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return fmt.Errorf("writing service account key: %w", err)
	}
	return nil
}

// newToken returns a random bearer token.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeTokenFile writes the static token file kube-apiserver reads with
// --token-auth-file: token,user,uid,"group1,group2".
func writeTokenFile(path string, users []User) error {
	var b strings.Builder
	w := csv.NewWriter(&b)
	for _, u := range users {
		uid := u.UID
		if uid == "" {
			uid = u.Name
		}
		rec := []string{u.Token, u.Name, uid}
		if len(u.Groups) > 0 {
			rec = append(rec, strings.Join(u.Groups, ","))
		}
		if err := w.Write(rec); err != nil {
			return fmt.Errorf("writing token file: %w", err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	return nil
}

// WriteKubeconfig writes a kubeconfig to path for cfg's server, CA and
// bearer token, with one cluster, user and context named name (namespace
// "default").
func WriteKubeconfig(path string, cfg *rest.Config, name string) error {
	contextName := name
	kc := clientcmdapi.NewConfig()
	kc.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[contextName] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName, Namespace: "default"}
	kc.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1. The listeners
// are closed before returning, so a port can in principle be taken by
// someone else before the component binds it; the component then fails to
// start and Start reports its log.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
