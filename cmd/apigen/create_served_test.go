package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// init's main.go checks, before it starts, that the API server serves
// the kind's group version (operator.CheckServed: "fails fast, with a
// message that says what is wrong ... its CustomResourceDefinition is not
// installed"). Create api with a kind of a group version that main.go
// does not check yet (another group's, another version's) adds it to the
// check, at the marker, beside the controller it starts, so that an
// operator deployed without that CRD says what is missing instead of
// waiting on an informer that never syncs; a group version checked
// already is not added again. A main.go without the marker (an older
// init's, which checks in one line) gets the lines to add printed.
func TestCreateAPIChecksNewGroupVersionIsServed(t *testing.T) {
	t.Parallel()
	op, _ := initOperator(t, nil)
	p, err := op.planAPI(t.Context(), apiRequest{api: "net.example.com/v1/DNSRecord"})
	require.NoError(t, err)
	main := string(p.edits["main.go"])
	require.Contains(t, main, "newDNSRecordController(", "the controller is wired")
	assert.Contains(t, main, "\t\texamplev1.SchemeGroupVersion,\n\t\tnetv1.SchemeGroupVersion,\n\t\t// +apigen:scaffold:served", "main.go checks that the new group version is served")
	assert.Contains(t, main, "\tnetv1 \"example.com/op/apis/net/v1\"\n", "main.go imports its package")

	p, err = op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	main = string(p.edits["main.go"])
	require.Contains(t, main, "newGadgetController(", "the controller is wired")
	assert.Equal(t, 1, strings.Count(main, ".SchemeGroupVersion"), "init's group version, checked already:\n%s", main)

	_, dir := initOperator(t, nil)
	mainFile := filepath.Join(dir, "main.go")
	b, err := os.ReadFile(mainFile)
	require.NoError(t, err)
	old := regexp.MustCompile(`(?s)operator\.CheckServed\(cfg,\n.*?\n\t\)`).ReplaceAll(b, []byte("operator.CheckServed(cfg, examplev1.SchemeGroupVersion)"))
	require.NotEqual(t, string(b), string(old))
	require.NoError(t, os.WriteFile(mainFile, old, 0o644))
	op, err = loadOperator(module{root: dir, path: "example.com/op"})
	require.NoError(t, err)
	p, err = op.planAPI(t.Context(), apiRequest{api: "net.example.com/v1/DNSRecord"})
	require.NoError(t, err)
	assert.Contains(t, string(p.edits["main.go"]), "operator.CheckServed(cfg, examplev1.SchemeGroupVersion)", "the check as it was")
	require.Len(t, p.printed, 1)
	assert.Contains(t, p.printed[0], "main.go has no \"// +apigen:scaffold:served\" line")
	assert.Contains(t, p.printed[0], "import netv1 \"example.com/op/apis/net/v1\"\nnetv1.SchemeGroupVersion,")
}
