package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generate.go's comment above the line says "go tool apigen -verify (same
// flags) checks them"; a user who notes that command in the comment, with
// the line's flags copied after "//go:generate go tool apigen", has a
// comment line that holds the whole go:generate line's text. create
// webhook finds the right line (generateLine, anchored, at its index),
// but writes the new one back with bytes.Replace of the line's text,
// whose first occurrence is inside the comment: the comment gets the
// webhook flags and the go:generate line is left without them, so the
// next go generate drops the webhooks' manifests. What should happen: the
// line is replaced at the index where loadOperator found it.
func TestReviewGenerateLineReplacedWhereFound(t *testing.T) {
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel != "generate.go" {
			return src
		}
		i := strings.Index(src, "//go:generate go tool apigen")
		line := src[i : i+strings.Index(src[i:], "\n")]
		return strings.Replace(src, "//\n//go:generate", "// To check without writing: "+line+" -verify\n//\n//go:generate", 1)
	})
	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Chdir(wd) })
	var stdout bytes.Buffer
	_ = p.apply(t.Context(), op, &stdout) // fails at generating (no go.mod), after planning generate.go's edit
	edited := string(p.edits["generate.go"])
	require.NotEmpty(t, edited)
	var comment, directive string
	for _, l := range strings.Split(edited, "\n") {
		switch {
		case strings.HasPrefix(l, "// To check"):
			comment = l
		case strings.HasPrefix(l, "//go:generate go tool apigen"):
			directive = l
		}
	}
	assert.Contains(t, directive, "-webhook deploy", "the go:generate line gets the webhook flags")
	assert.NotContains(t, comment, "-webhook deploy", "the user's comment is left as it was")
}
