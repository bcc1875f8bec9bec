package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The same line with the API directory as the docs write it, ./apis (the
// generation takes it; it is apis): create refuses the operator as one
// "with no API of its own (apigen init without -api, which reconciles
// ConfigMaps)", which it has. What should happen: ./apis (and apis/) are
// taken as apis, or the error says the line's API directory is not
// "apis".
func TestReviewCreateTakesDotSlashAPIs(t *testing.T) {
	t.Parallel()
	_, dir := plannedOperator(t, nil)
	gen := filepath.Join(dir, "generate.go")
	src, err := os.ReadFile(gen)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(gen, []byte(strings.Replace(string(src), "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev ./apis", 1)), 0o644))
	_, err = loadOperator(module{root: dir, path: "example.com/op"})
	if err != nil {
		assert.NotContains(t, err.Error(), "init without -api", "an operator made by init -api, whose line names ./apis")
	}
}

// go generate expands $NAME in the go:generate line's words from the
// environment (go help generate: "$GOFILE ..., and any environment
// variable"), so a line with -deploy-image ghcr.io/acme/op:$TAG
// generates the deployment with the image of TAG. create reads the line
// into the arguments it generates with, unexpanded: its generation
// writes the image "ghcr.io/acme/op:$TAG" into deploy/deployment.yaml,
// which go generate would not. What should happen: create expands the
// words as go generate does (or refuses a line with $).
func TestReviewCreateExpandsGenerateLineAsGoGenerate(t *testing.T) {
	t.Setenv("TAG", "v1.2.3")
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image ghcr.io/acme/op:$TAG", 1)
		}
		return src
	})
	p, err := op.planAPI(t.Context(), "example.com/v1/Gadget")
	require.NoError(t, err)
	cfg, err := parseConfig(p.genArgs)
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/acme/op:v1.2.3", cfg.deployImage, "the image create generates with, from the line %q", op.genLine)
}
