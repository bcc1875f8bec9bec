package docs

// The "Testing your operator against a real control plane" block of
// docs/testing.md, run for real: config/ is a link to the widget example's
// manifests.

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

var env = controlplane.Shared{Options: controlplane.Options{
	CRDs:  []string{"config/crd"},
	Users: []controlplane.User{{Name: "widget-controller", ClusterRoles: []string{"widget-controller"}}},
}}

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

func TestWidget(t *testing.T) {
	cp := env.Get(t)
	out, err := cp.KubectlCommand(t.Context(), "apply", "-f", "config/rbac").CombinedOutput()
	require.NoError(t, err, "%s", out)
	cfg, err := cp.UserConfig("widget-controller") // the operator runs with exactly its RBAC
	require.NoError(t, err)
	_ = cfg // start the operator with cfg, create objects with cp.Config() (the admin), wait for them to converge
	events, err := cp.AuditEvents()
	require.NoError(t, err)
	assert.Zero(t, audit.Count(events, audit.ByUser("widget-controller"), audit.ByCode(403)), "refused requests")
}
