package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// An operator generated before the webhook Service was named after it
// (markers without serviceName, as kubebuilder writes them) called
// webhook-service, and its user's patches of deploy/patches/ name that
// Service (a mesh annotation, say). Regenerated with this apigen, the
// Service is things-operator-webhooks: apigen exits 0, but kustomize
// fails on the patch without its object, so kubectl apply -k of the
// upgraded operator fails. apigen knows (it applies the user's patches
// to check the webhooks, and skips one whose object is missing); it
// should refuse, naming the patch and the Service's new name, or the
// upgrade notes should say so.
func TestUpgradeUserPatchOfTheOldWebhookService(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{
		"webhooks/webhooks.go": kubebuilderWebhooks,
		"deploy/patches/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: webhook-service
  namespace: things-system
  annotations:
    mesh.example.com/inject: "false"
`,
	})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	if code != 0 {
		t.Logf("refused: %s", stderr) // a clear refusal is a fix
		return
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(dir, "deploy")).CombinedOutput()
	if err != nil {
		t.Fatalf("apigen exited 0 (stdout: %s) with a kustomization that kubectl kustomize cannot build: the user's patch names the Service webhook-service that the operator had before the upgrade:\n%s", stdout, out)
	}
}
