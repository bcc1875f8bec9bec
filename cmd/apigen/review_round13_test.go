package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
