package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Generate.go's go:generate line is split as go generate splits it (a
// quoted argument with spaces is one argument): a -rbac-paths of two
// patterns, as its help text says ("space-separated package patterns"),
// is a valid line that create reads.
func TestCreateReadsQuotedGenerateArgs(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel != "generate.go" {
			return src
		}
		require.Contains(t, src, "-rbac-paths . ")
		return strings.Replace(src, "-rbac-paths . ", `-rbac-paths ". ./internal/..." `, 1)
	})
	cfg, err := parseConfig(op.genArgs)
	require.NoError(t, err)
	assert.Equal(t, []string{".", "./internal/..."}, cfg.rbacPaths)
}

// The arguments create writes back to the go:generate line are read by
// go generate's splitting as they were: quoted where they have spaces,
// quotes or backslashes, or are empty.
func TestGenerateArgsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-rbac-role", "widget-operator", "-rbac-paths", ". ./internal/..."},
		{"-crd", "", "-x", `a"b`, `c\d`, "tab\there"},
		{"plain"},
	} {
		line := strings.Join(quoteArgs(args), " ")
		got, err := splitGenerate(line)
		require.NoError(t, err, line)
		assert.Equal(t, args, got, line)
	}
	got, err := splitGenerate(` -a  "b c"	d `)
	require.NoError(t, err)
	assert.Equal(t, []string{"-a", "b c", "d"}, got)
	_, err = splitGenerate(`-a "b c`)
	assert.Error(t, err, "an unterminated quoted string")
}

// An operator checked out with CRLF line ends (git's core.autocrlf on
// Windows): create reads generate.go's apigen line as go generate does,
// without the \r that ends it, so the last argument, -deploy-image's,
// is "widget-operator:dev" (not with a \r that create's generation would
// write into deploy/deployment.yaml), and the line create webhook writes
// back replaces the line without its \r: the file keeps its CRLF ends.
func TestCreateReadsGenerateLineWithCRLF(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.ReplaceAll(src, "\n", "\r\n")
		}
		return src
	})
	cfg, err := parseConfig(op.genArgs)
	require.NoError(t, err)
	assert.Equal(t, "widget-operator:dev", cfg.deployImage, "the image of generate.go's line, as go generate reads it")
	assert.NotContains(t, op.genLine, "\r", "the line that create replaces, without the file's line end")
}

// A go:generate line that gives the webhook flags as -flag=value (as the
// flag package takes them, and as many write them) has webhooks already:
// create webhook leaves its webhook directory and paths alone, deciding
// from the flags as apigen parses them, not from the word "-webhook"
// (appending "-webhook deploy -webhook-paths ." after the user's would
// win, the last of a flag winning, and generate the manifests and
// zz_generated.webhooks.go elsewhere).
func TestCreateWebhookKeepsWebhookFlagsWithEquals(t *testing.T) {
	t.Parallel()
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, " -rbac deploy", " -webhook=config/webhook -webhook-paths=./internal/... -rbac deploy", 1)
		}
		return src
	})
	cfg, err := parseConfig(op.genArgs)
	require.NoError(t, err)
	require.Equal(t, "config/webhook", cfg.webhookDir)
	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	cfg, err = parseConfig(p.genArgs)
	require.NoError(t, err)
	assert.Equal(t, "config/webhook", cfg.webhookDir, "the user's webhook directory, args %q", p.genArgs)
	// The user's webhook paths, with the root package, where the webhook
	// is written, added.
	assert.Equal(t, []string{"./internal/...", "."}, cfg.webhookPaths, "the user's webhook paths and the root, args %q", p.genArgs)
	assert.Contains(t, p.genArgs, "-webhook-paths=./internal/... .")
}

// An operator whose generate.go has a second apigen line (a role of its
// own for another part of the module, say) is refused with an error that
// says generate.go has two such lines and create does not know which to
// change (not that it "has no main.go and generate.go with a
// //go:generate go tool apigen line", as it has both).
func TestCreateTwoGenerateLinesError(t *testing.T) {
	t.Parallel()
	_, dir := plannedOperator(t, nil)
	gen := filepath.Join(dir, "generate.go")
	b, err := os.ReadFile(gen)
	require.NoError(t, err)
	b = append(b, "//go:generate go tool apigen -out \"\" -crd \"\" -rbac deploy/tools -rbac-role widget-tools -rbac-paths ./tools/...\n"...)
	require.NoError(t, os.WriteFile(gen, b, 0o644))
	_, err = loadOperator(module{root: dir, path: "example.com/op"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "it has no main.go and generate.go with", "it has both")
	assert.Contains(t, err.Error(), "generate.go has 2 \"//go:generate go tool apigen\" lines")
}

// create writes generate.go's go:generate line again only when its
// arguments change: create api, which adds none, leaves the user's line
// as it is, though apigen would join its arguments otherwise (two spaces
// between them, a tab, a trailing space, an argument quoted that needs no
// quotes), and does not say it added to generate.go.
func TestCreateAPILeavesGenerateLineAlone(t *testing.T) {
	op, dir := plannedOperator(t, func(rel, src string) string {
		if rel != "generate.go" {
			return src
		}
		// The user aligned the arguments with two spaces and quoted the
		// role; go generate reads the same arguments.
		return strings.Replace(strings.Replace(src, " -rbac deploy", "  -rbac deploy", 1), "-rbac-role widget-operator", `-rbac-role "widget-operator"`, 1)
	})
	before, err := os.ReadFile(filepath.Join(dir, "generate.go"))
	require.NoError(t, err)
	require.Contains(t, string(before), `  -rbac deploy -rbac-role "widget-operator"`)
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	require.Equal(t, op.genArgs, p.genArgs, "create api plans no change of the arguments")

	wd, err := os.Getwd()
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Chdir(wd) })
	var stdout bytes.Buffer
	_ = p.apply(t.Context(), op, &stdout) // fails at generating (no go.mod), after its writes
	assert.NotContains(t, p.edits, "generate.go", "create api rewrote the user's go:generate line, adding nothing to it")
	assert.NotContains(t, stdout.String(), "added to generate.go")
}

// A go:generate line that names the API directory, apis, as its argument
// ("The API directory is the argument (default ./apis)") gets from create
// webhook its webhook flags before that argument, where flag parsing has
// not stopped yet, so that the planned arguments parse with the webhook
// directory and the same API directory.
func TestCreateWebhookFlagsBeforeAPIDirArgument(t *testing.T) {
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
	assert.Equal(t, []string{"."}, cfg.webhookPaths)
	assert.Equal(t, "apis", cfg.apis)
	assert.Equal(t, "apis", p.genArgs[len(p.genArgs)-1], "the line's argument stays last")
}

// The line's API directory, as the docs write it (./apis) or with a
// slash at its end (apis/), is apis, where create adds: create takes the
// operator. Another API directory is refused, quoting the line's.
func TestCreateTakesDotSlashAPIs(t *testing.T) {
	t.Parallel()
	_, dir := plannedOperator(t, nil)
	gen := filepath.Join(dir, "generate.go")
	src, err := os.ReadFile(gen)
	require.NoError(t, err)
	for _, apis := range []string{"./apis", "apis/", "other"} {
		require.NoError(t, os.WriteFile(gen, []byte(strings.Replace(string(src), "-deploy-image widget-operator:dev", "-deploy-image widget-operator:dev "+apis, 1)), 0o644))
		op, err := loadOperator(module{root: dir, path: "example.com/op"})
		if apis == "other" {
			assert.EqualError(t, err, `generate.go's go:generate line has the API directory "other": create adds to the API packages under apis, the API directory of init -api`)
			continue
		}
		require.NoError(t, err, apis)
		assert.NotEmpty(t, op.kinds, apis)
	}
}

// go generate expands $NAME in the go:generate line's words from its own
// variables and the environment (go help generate), so a line with
// -deploy-image ghcr.io/acme/op:$TAG generates the deployment with the
// image of TAG. create generates with the words expanded so too, and
// writes the line back as it was written, unexpanded.
func TestCreateExpandsGenerateLineAsGoGenerate(t *testing.T) {
	t.Setenv("TAG", "v1.2.3")
	op, _ := plannedOperator(t, func(rel, src string) string {
		if rel == "generate.go" {
			return strings.Replace(src, "-deploy-image widget-operator:dev", "-deploy-image ghcr.io/acme/op:$TAG -header ${GOPACKAGE}$DOLLAR$GOFILE:$GOLINE", 1)
		}
		return src
	})
	p, err := op.planAPI(t.Context(), apiRequest{api: "example.com/v1/Gadget"})
	require.NoError(t, err)
	cfg, err := parseConfig(p.genArgs)
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/acme/op:v1.2.3", cfg.deployImage, "the image create generates with, from the line %q", op.genLine)
	assert.Equal(t, "main$generate.go:"+strconv.Itoa(strings.Count(string(op.genSrc[:bytes.Index(op.genSrc, []byte("//go:generate"))]), "\n")+1), cfg.header)

	// The line create writes back, with the webhook flags, keeps the
	// words as they were.
	p, err = op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/acme/op:v1.2.3", must(parseConfig(p.genArgs)).deployImage)
	assert.Equal(t, "deploy", must(parseConfig(p.genArgs)).webhookDir)
	assert.Contains(t, p.genWords, "ghcr.io/acme/op:$TAG")
	assert.Contains(t, p.genWords, "${GOPACKAGE}$DOLLAR$GOFILE:$GOLINE")
	assert.Contains(t, p.genWords, "-webhook")
}

// generate.go's comment above the line says "go tool apigen -verify (same
// flags) checks them"; a user who notes that command in the comment, with
// the line's flags copied after "//go:generate go tool apigen", has a
// comment line that holds the whole go:generate line's text before the
// line. create webhook writes the new line, with the webhook flags, where
// loadOperator found the go:generate line (so the next go generate
// generates the webhooks), and keeps the rest of generate.go byte for
// byte: the comment as the user wrote it, and the file's CRLF ends.
func TestCreateWebhookWritesGenerateLineWhereFound(t *testing.T) {
	var line string // the go:generate line as written, without its line end
	op, dir := plannedOperator(t, func(rel, src string) string {
		if rel != "generate.go" {
			return src
		}
		i := strings.Index(src, "//go:generate go tool apigen")
		line = src[i : i+strings.Index(src[i:], "\n")]
		src = strings.Replace(src, "//\n//go:generate", "// To check without writing: "+line+" -verify\n//\n//go:generate", 1)
		return strings.ReplaceAll(src, "\n", "\r\n")
	})
	src, err := os.ReadFile(filepath.Join(dir, "generate.go"))
	require.NoError(t, err)
	at := bytes.Index(src, []byte("\n"+line+"\r\n")) + 1
	require.Positive(t, at, "the go:generate line, after the comment that holds its text")
	p, err := op.planWebhooks(webhookRequest{kind: "Widget", defaulting: true})
	require.NoError(t, err)

	wd, err := os.Getwd()
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Chdir(wd) })
	var stdout bytes.Buffer
	_ = p.apply(t.Context(), op, &stdout) // fails at generating (no go.mod), after planning generate.go's edit
	edited := string(p.edits["generate.go"])
	require.NotEmpty(t, edited)
	before, after := string(src[:at]), string(src[at+len(line):])
	require.True(t, strings.HasPrefix(edited, before), "generate.go up to the go:generate line, the user's comment with it, as it was:\n%s", edited)
	require.True(t, strings.HasSuffix(edited, after), "generate.go from the go:generate line's CRLF end on as it was:\n%s", edited)
	directive := strings.TrimSuffix(strings.TrimPrefix(edited, before), after)
	assert.True(t, strings.HasPrefix(directive, "//go:generate go tool apigen "), directive)
	assert.NotContains(t, directive, "\n")
	assert.Contains(t, directive, "-webhook deploy", "the go:generate line gets the webhook flags")
	assert.Equal(t, src, p.read["generate.go"], "the write is checked against generate.go as planned")
}
