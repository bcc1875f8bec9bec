package audit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

// Lines in the shape kube-apiserver writes at Metadata level.
const sample = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/demo/configmaps","verb":"create","user":{"username":"admin","uid":"admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"smoke.test","objectRef":{"resource":"configmaps","namespace":"demo","name":"cm","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-21T01:00:00.000001Z","stageTimestamp":"2026-11-21T01:00:00.002000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/demo/deployments/web/status","verb":"update","user":{"username":"system:serviceaccount:kube-system:deployment-controller","groups":["system:serviceaccounts"]},"objectRef":{"resource":"deployments","namespace":"demo","name":"web","apiGroup":"apps","apiVersion":"v1","subresource":"status"},"responseStatus":{"metadata":{},"code":409},"requestReceivedTimestamp":"2026-11-21T01:00:01Z","stageTimestamp":"2026-11-21T01:00:01Z"}

{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a3","stage":"ResponseComplete","requestURI":"/api/v1/namespaces?watch=true","verb":"watch","user":{"username":"admin"},"objectRef":{"resource":"namespaces","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T01:00:02Z","stageTimestamp":"2026-11-21T01:00:03Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a4","stage":"ResponseComplete","requestURI":"/readyz","verb":"get","user":{"username":"system:anonymous"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-21T01:00:04Z","stageTimestamp":"2026-11-21T01:00:04Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a5","stage":"ResponseComplete","verb":"delete","user":{"username":"admin"},"objectRef":{"resource":"configmaps","namespace":"demo","name":"cm","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-21T01:00:05Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a6","stage":"Respon`

func TestParse(t *testing.T) {
	events, err := audit.Parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, events, 5, "blank and torn lines are skipped")

	assert.Equal(t, audit.Event{
		AuditID: "a1", Stage: "ResponseComplete", Level: "Metadata",
		User: "admin", Groups: []string{"system:masters", "system:authenticated"},
		Verb: "create", APIVersion: "v1", Resource: "configmaps", Namespace: "demo", Name: "cm",
		Code: 201, RequestURI: "/api/v1/namespaces/demo/configmaps", UserAgent: "smoke.test",
		Time: time.Date(2026, 11, 21, 1, 0, 0, 1000, time.UTC),
	}, events[0])
	assert.Equal(t, "admin create configmaps demo/cm -> 201", events[0].String())
	assert.Equal(t, "system:serviceaccount:kube-system:deployment-controller update deployments.apps/status demo/web -> 409", events[1].String())
	assert.Equal(t, "system:anonymous get   -> 200", events[3].String(), "non-resource request")
}

func TestFilters(t *testing.T) {
	events, err := audit.Parse(strings.NewReader(sample))
	require.NoError(t, err)

	tests := []struct {
		name    string
		filters []audit.Filter
		want    []string // audit IDs
	}{
		{"all", nil, []string{"a1", "a2", "a3", "a4", "a5"}},
		{"by user", []audit.Filter{audit.ByUser("admin")}, []string{"a1", "a3", "a5"}},
		{"writes", []audit.Filter{audit.Writes()}, []string{"a1", "a2", "a5"}},
		{"admin writes", []audit.Filter{audit.ByUser("admin"), audit.Writes()}, []string{"a1", "a5"}},
		{"by verb", []audit.Filter{audit.ByVerb("watch", "get")}, []string{"a3", "a4"}},
		{"core resource", []audit.Filter{audit.ByResource("", "configmaps")}, []string{"a1", "a5"}},
		{"group resource", []audit.Filter{audit.ByResource("apps", "deployments")}, []string{"a2"}},
		{"wrong group", []audit.Filter{audit.ByResource("", "deployments")}, nil},
		{"status subresource", []audit.Filter{audit.BySubresource("status")}, []string{"a2"}},
		{"object", []audit.Filter{audit.ByObject("demo", "cm")}, []string{"a1", "a5"}},
		{"cluster-scoped list", []audit.Filter{audit.ByObject("", ""), audit.ByResource("", "namespaces")}, []string{"a3"}},
		{"namespace", []audit.Filter{audit.ByNamespace("demo")}, []string{"a1", "a2", "a5"}},
		{"code", []audit.Filter{audit.ByCode(409)}, []string{"a2"}},
		{"succeeded", []audit.Filter{audit.Succeeded(), audit.Writes()}, []string{"a1", "a5"}},
		{"since", []audit.Filter{audit.Since(time.Date(2026, 11, 21, 1, 0, 2, 0, time.UTC))}, []string{"a3", "a4", "a5"}},
		{"completed", []audit.Filter{audit.Completed()}, []string{"a1", "a2", "a3", "a4", "a5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range audit.Select(events, tt.filters...) {
				got = append(got, e.AuditID)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, len(tt.want), audit.Count(events, tt.filters...))
		})
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	require.NoError(t, os.WriteFile(path, []byte(sample), 0o644))
	events, err := audit.ReadFile(path)
	require.NoError(t, err)
	assert.Len(t, events, 5)

	_, err = audit.ReadFile(filepath.Join(t.TempDir(), "missing.log"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func ExampleSelect() {
	log := `{"kind":"Event","stage":"ResponseComplete","verb":"create","user":{"username":"admin"},"objectRef":{"resource":"configmaps","namespace":"demo","name":"settings","apiVersion":"v1"},"responseStatus":{"code":201}}
{"kind":"Event","stage":"ResponseComplete","verb":"get","user":{"username":"admin"},"objectRef":{"resource":"configmaps","namespace":"demo","name":"settings","apiVersion":"v1"},"responseStatus":{"code":200}}`
	events, _ := audit.Parse(strings.NewReader(log))
	for _, e := range audit.Select(events, audit.ByUser("admin"), audit.Writes()) {
		fmt.Println(e)
	}
	// Output: admin create configmaps demo/settings -> 201
}

func TestTallyAndLines(t *testing.T) {
	events := []audit.Event{
		{User: "foo-controller", Verb: "create", APIGroup: "apps", Resource: "deployments", Namespace: "ns", Name: "web", Code: 201},
		{User: "foo-controller", Verb: "update", APIGroup: "samplecontroller.k8s.io", Resource: "foos", Subresource: "status", Namespace: "ns", Name: "a", Code: 409},
		{User: "foo-controller", Verb: "update", APIGroup: "samplecontroller.k8s.io", Resource: "foos", Subresource: "status", Namespace: "ns", Name: "a", Code: 200},
		{User: "foo-controller", Verb: "update", APIGroup: "samplecontroller.k8s.io", Resource: "foos", Subresource: "status", Namespace: "ns", Name: "a", Code: 200},
	}
	tally := audit.Tally(events)
	assert.Equal(t, map[string]int{
		"create deployments 201": 1,
		"update foos/status 409": 1,
		"update foos/status 200": 2,
	}, tally)
	assert.Equal(t, "create deployments 201: 1, update foos/status 200: 2, update foos/status 409: 1", audit.FormatTally(tally))
	lines := audit.Lines(events)
	require.Len(t, lines, 4)
	assert.Equal(t, events[0].String(), lines[0])
}
