package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Review: the resource check skips every type declared in a grouped
// "type ( ... )" declaration, though client-gen makes clients for them
// and controller-gen CRDs: a Quiz declared so gets a CRD serving
// "quizzes" and a client requesting "quizes" (404 from a real API
// server), and apigen does not refuse.
func TestReviewResourcesAgreeGroupedDecl(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	src := `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type (
	// Quiz is a resource.
	// +genclient
	// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
	Quiz struct {
		metav1.TypeMeta   ` + "`json:\",inline\"`" + `
		metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	}

	// QuizList is a list of Quiz.
	// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
	QuizList struct {
		metav1.TypeMeta ` + "`json:\",inline\"`" + `
		metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
		Items           []Quiz ` + "`json:\"items\"`" + `
	}
)
`
	if err := os.WriteFile(filepath.Join(dir, "apis/things/v1/quiz.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := apigen(t, dir)
	got := tree(t, dir)
	client := got["generated/clientset/versioned/typed/things/v1/quiz.go"]
	t.Logf("exit %d; CRD example.com_quizzes.yaml written: %v; client requests \"quizes\": %v", code,
		got["config/crd/example.com_quizzes.yaml"] != "", strings.Contains(client, `"quizes"`))
	assert.Equal(t, 1, code, "apigen refuses the Quiz whose CRD and client name different resources; stderr: %s", stderr)
	assert.Contains(t, stderr, `type Quiz of apis/things/v1: the CRD serves "quizzes", the generated client requests "quizes"`)
}
