// Package envtestbin points controller-runtime's envtest at the project's
// control-plane binaries, as setup-envtest points it at downloaded ones:
// the controller-runtime twins in cmd are tested the way controller-runtime's
// documentation teaches, with envtest.
package envtestbin

import (
	"path/filepath"

	"github.com/ctrlkit/ctrlkit/testenv/binaries"
)

// Dir returns the directory holding etcd, kube-apiserver and kubectl, for
// envtest.Environment.BinaryAssetsDirectory; it fails if they are not
// built (make testenv-binaries builds them).
func Dir() (string, error) {
	set, err := binaries.Locate(binaries.Options{})
	if err != nil {
		return "", err
	}
	return filepath.Dir(set.KubeAPIServer), nil
}
