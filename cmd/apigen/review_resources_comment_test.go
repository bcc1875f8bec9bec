package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Review: clientTypes reads "+resourceName" from every comment group
// between the previous declaration and the type, but client-gen reads
// tags only from the type's doc comment and the group right above it
// (gengo's CommentLines and SecondClosestCommentLines). A +resourceName
// one group further up (gofmt-stable) makes apigen believe the client
// requests the CRD's "quizzes" while the generated client requests
// "quizes": no refusal, every request 404s.
func TestReviewResourcesAgreeThirdCommentGroup(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	src := `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +resourceName=quizzes

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Quiz is a resource.
// +kubebuilder:resource:path=quizzes
type Quiz struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// QuizList is a list of Quiz.
type QuizList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Quiz ` + "`json:\"items\"`" + `
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apis/things/v1/quiz.go"), []byte(src), 0o644))
	code, _, stderr := apigen(t, dir)
	got := tree(t, dir)
	client := got["generated/clientset/versioned/typed/things/v1/quiz.go"]
	t.Logf("exit %d; CRD example.com_quizzes.yaml written: %v; client requests \"quizes\": %v", code,
		got["config/crd/example.com_quizzes.yaml"] != "", strings.Contains(client, `"quizes"`))
	assert.Equal(t, 1, code, "apigen refuses the Quiz whose CRD and client name different resources; stderr: %s", stderr)
	assert.Contains(t, stderr, `type Quiz of apis/things/v1: the CRD serves "quizzes", the generated client requests "quizes"`)
}
