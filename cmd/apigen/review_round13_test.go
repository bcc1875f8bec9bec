package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A go:generate line that names the API directory, apis, as its argument
// (main.go's docs: "The API directory is the argument (default ./apis)";
// create takes the line: loadOperator accepts cfg.apis == "apis") gets
// from create webhook its webhook flags appended after that argument,
// where flag parsing has stopped: the plan's arguments then do not parse
// ("one API directory expected, got [apis -webhook deploy ...]"), and
// create fails with that error about its own line. What should happen:
// the flags go before the first argument that is not a flag, as
// readRoot does for the flag it changes.
func TestReviewCreateWebhookFlagsBeforeAPIDirArgument(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev apis", 1)
		}
		return src
	})
	require.Equal(t, "apis", op.genArgs[len(op.genArgs)-1])
	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	cfg, err := parseConfig(p.genArgs)
	require.NoError(t, err, "the planned go:generate arguments %q", p.genArgs)
	assert.Equal(t, "deploy", cfg.webhookDir)
	assert.Equal(t, "apis", cfg.apis)
}

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
