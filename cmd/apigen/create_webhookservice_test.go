package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apigen init refuses -webhooks for an operator whose name makes a
// webhook Service name the API server does not take (one starting with a
// digit: "1widget-operator-webhooks"), before writing anything: create
// webhook for the same operator (made by init without -webhooks, which
// takes the name) refuses it at its plan too, naming the Service name,
// rather than failing at the generation's consistency check.
func TestCreateWebhookRefusesServiceNameAtPlan(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-rbac-role widget-operator", "-rbac-role 1widget-operator", 1)
		}
		return src
	})
	require.Equal(t, "1widget-operator", op.name)
	// What init says of the name with -webhooks.
	s := &scaffold{Name: "1widget-operator", Webhooks: true}
	initErr := s.complete("example.com/v1/Widget")
	require.Error(t, initErr)
	require.Contains(t, initErr.Error(), "not a Service name")

	_, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.Error(t, err, "create webhook plans a webhook whose Service name %q the API server refuses", "1widget-operator"+serviceSuffix)
	assert.Contains(t, err.Error(), "1widget-operator"+serviceSuffix)
	assert.Contains(t, err.Error(), "not a Service name")
}
