package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Review (round 3): init refuses the API groups whose first label makes
// packages Go cannot import or compile (internal, testdata, vendor, Go
// keywords: issue 61's defect 18), but not "meta". With
// -api meta.example.com/v1/Widget the generated fake clientset imports
// the typed client package as metav1 beside k8s.io/apimachinery's metav1
// ("metav1 redeclared in this block"), and so does the scaffold's
// controller_test.go with the API package: init reports "go test ./...
// and go build . work now", and go vet ./... and go test ./... fail.
func TestReviewInitMetaGroupBuilds(t *testing.T) {
	t.Parallel()
	dir := operatorModule(t, t.TempDir())
	code, stdout, stderr := apigenIn(t, dir, nil, "init", "-name", "op", "-api", "meta.example.com/v1/Widget")
	if code != 0 {
		// Refused with a clear error is a fix too.
		require.Contains(t, stderr, "meta", "stdout: %s", stdout)
		return
	}
	require.Contains(t, stdout, "go test ./... and go build . work now")
	goCmd(t, dir, "vet", "./...")
}
