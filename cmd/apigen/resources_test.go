package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pluralKinds are kinds whose plurals controller-gen and client-gen make
// differently (Quiz, Person, Analysis) or alike but unlike a naive "s"
// (Leaf, Knife).
var pluralKinds = []string{"Quiz", "Leaf", "Knife", "Person", "Analysis"}

// kindSource is a resource type of the fixture's API package, kind, with
// extra as the last lines of its comment.
func kindSource(kind, extra string) string {
	return fmt.Sprintf(`package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
%s
// %[2]s is a resource.
type %[2]s struct {
	metav1.TypeMeta   `+"`json:\",inline\"`"+`
	metav1.ObjectMeta `+"`json:\"metadata,omitempty\"`"+`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// %[2]sList is a list of %[2]s.
type %[2]sList struct {
	metav1.TypeMeta `+"`json:\",inline\"`"+`
	metav1.ListMeta `+"`json:\"metadata,omitempty\"`"+`
	Items           []%[2]s `+"`json:\"items\"`"+`
}
`, extra, kind)
}

// For a type without markers, controller-gen names the CRD's resource with
// one pluralizer and client-gen the client's with another: apigen refuses
// where they differ, naming the markers to add, and writes nothing. With
// the markers init writes, they agree.
func TestResourcesAgree(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	for _, kind := range pluralKinds {
		p := filepath.Join(dir, "apis/things/v1", strings.ToLower(kind)+".go")
		require.NoError(t, os.WriteFile(p, []byte(kindSource(kind, "")), 0o644))
	}
	before, beforeDirs := tree(t, dir), dirs(t, dir)
	code, _, stderr := apigen(t, dir)
	assert.Equal(t, 1, code, "stderr: %s", stderr)
	for _, want := range []string{
		`type Analysis of apis/things/v1: the CRD serves "analyses", the generated client requests "analysises"`,
		`type Person of apis/things/v1: the CRD serves "people", the generated client requests "persons"`,
		`type Quiz of apis/things/v1: the CRD serves "quizzes", the generated client requests "quizes"`,
		`"+kubebuilder:resource:path=<plural>"`, `"+resourceName=<plural>"`,
	} {
		assert.Contains(t, stderr, want)
	}
	for _, agree := range []string{"type Leaf ", "type Knife ", "type Thing "} {
		assert.NotContains(t, stderr, agree)
	}
	assert.Equal(t, before, tree(t, dir), "nothing written")
	assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")

	// The types as init writes them: their markers make the two agree.
	for _, kind := range pluralKinds {
		var s scaffold
		s.Name = "op"
		require.NoError(t, s.complete("example.com/v1/"+kind))
		src, err := render("types.go.tmpl", &s)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "apis/things/v1", strings.ToLower(kind)+".go"), src, 0o644))
	}
	code, _, stderr = apigen(t, dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	got := tree(t, dir)
	for kind, plural := range map[string]string{"Quiz": "quizzes", "Leaf": "leaves", "Knife": "knives", "Person": "people", "Analysis": "analyses"} {
		crd := got["config/crd/example.com_"+plural+".yaml"]
		assert.Contains(t, crd, "    plural: "+plural+"\n", kind)
		client := got["generated/clientset/versioned/typed/things/v1/"+strings.ToLower(kind)+".go"]
		assert.Contains(t, client, `"`+plural+`"`, "the client of %s requests the CRD's resource", kind)
	}
}

// init's plural is controller-gen's, and the API's client methods are
// client-gen's.
func TestScaffoldPlurals(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string][2]string{
		"Widget": {"widgets", "Widgets"}, "Policy": {"policies", "Policies"}, "Box": {"boxes", "Boxes"},
		"Quiz": {"quizzes", "Quizes"}, "Leaf": {"leaves", "Leaves"}, "Knife": {"knives", "Knives"},
		"Person": {"people", "Persons"}, "Analysis": {"analyses", "Analysises"},
	} {
		var s scaffold
		s.Name = "op"
		require.NoError(t, s.complete("example.com/v1/"+kind))
		assert.Equal(t, want[0], s.Plural, kind)
		assert.Equal(t, want[1], s.ClientPlural, kind)
	}
}

// The resource check skips every type declared in a grouped
// "type ( ... )" declaration, though client-gen makes clients for them
// and controller-gen CRDs: a Quiz declared so gets a CRD serving
// "quizzes" and a client requesting "quizes" (404 from a real API
// server), and apigen does not refuse.
func TestResourcesAgreeGroupedDecl(t *testing.T) {
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

// clientTypes reads "+resourceName" from every comment group
// between the previous declaration and the type, but client-gen reads
// tags only from the type's doc comment and the group right above it
// (gengo's CommentLines and SecondClosestCommentLines). A +resourceName
// one group further up (gofmt-stable) makes apigen believe the client
// requests the CRD's "quizzes" while the generated client requests
// "quizes": no refusal, every request 404s.
func TestResourcesAgreeThirdCommentGroup(t *testing.T) {
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
