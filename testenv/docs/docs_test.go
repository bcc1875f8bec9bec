// Package docs checks that every Go code block of the project's doc
// comments and READMEs compiles: each must stand, line for line, in Go code
// that the tests compile. A block in a doc comment must stand in a _test.go
// file of its own package (an Example, usually) or, when a README shows it
// too, of this package; a block in a README must stand in a Go file of this
// package (readme_test.go, readme_testenv_test.go), which builds it with the
// library as another module would, or in a _test.go file the README names by
// its path (a whole example it sends the reader to).
package docs

import (
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// block is a code block found in a doc comment or README.
type block struct {
	where string // file:line
	lines []string
}

// skipDir reports directories whose Go files are not the project's own
// writing: generated code, and hidden directories.
func skipDir(rel string) bool {
	for _, generated := range []string{"foo/generated", "examples/bucket/generated", "examples/configset/generated"} {
		if rel == generated || strings.HasPrefix(rel, generated+"/") {
			return true
		}
	}
	return strings.HasPrefix(filepath.Base(rel), ".")
}

// normalize trims each line and drops empty ones, so that indentation does
// not matter.
func normalize(text string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// isGo reports whether code parses as Go: declarations, or statements.
func isGo(code string) bool {
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", "package p\n"+code, 0); err == nil {
		return true
	}
	_, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+code+"\n}", 0)
	return err == nil
}

// contains reports whether sub stands, contiguously, in lines.
func contains(lines, sub []string) bool {
	for i := 0; i+len(sub) <= len(lines); i++ {
		if slices.Equal(lines[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// docBlocks returns the Go code blocks of the doc comments of the non-test
// Go files in dir.
func docBlocks(t *testing.T, root, dir string) []block {
	var out []block
	var p comment.Parser
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(filepath.Base(file), "zz_generated") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, cg := range f.Comments {
			for _, b := range p.Parse(cg.Text()).Content {
				code, ok := b.(*comment.Code)
				if !ok || !isGo(code.Text) {
					continue
				}
				rel, _ := filepath.Rel(root, file)
				out = append(out, block{where: rel + ":" + strconv.Itoa(fset.Position(cg.Pos()).Line), lines: normalize(code.Text)})
			}
		}
	}
	return out
}

// testCode returns the normalized lines of the _test.go files in dir.
func testCode(t *testing.T, dir string, suffix string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	require.NoError(t, err)
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		lines = append(lines, normalize(string(data))...)
	}
	return lines
}

var fenced = regexp.MustCompile("(?s)```go\n(.*?)```")

// testFilePath matches a repository path of a _test.go file named in
// Markdown, such as `queue/multicluster/example_status_test.go`.
var testFilePath = regexp.MustCompile(`[\w.-]+(?:/[\w.-]+)*_test\.go`)

// readmeBlocks returns the ```go blocks of the Markdown files under root.
func readmeBlocks(t *testing.T, root string) []block {
	var out []block
	eachMarkdown(t, root, func(rel string, data []byte) {
		for _, m := range fenced.FindAllSubmatchIndex(data, -1) {
			line := strings.Count(string(data[:m[0]]), "\n") + 1
			out = append(out, block{where: rel + ":" + strconv.Itoa(line), lines: normalize(string(data[m[2]:m[3]]))})
		}
	})
	return out
}

// eachMarkdown calls f with the path, relative to root, and the content of
// every Markdown file under root but those of hidden and build-output
// folders, test data and node_modules.
func eachMarkdown(t *testing.T, root string, f func(rel string, data []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") ||
			d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f(rel, data)
		return nil
	})
	require.NoError(t, err)
}

// TestDocCommentBlocksCompile checks every Go code block of the doc
// comments against the _test.go files of its package, or of this package for
// a block that is also in a README (one with its own TestMain, say).
func TestDocCommentBlocksCompile(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	here, err := os.Getwd()
	require.NoError(t, err)
	readmeCode := testCode(t, here, "_test.go")
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && skipDir(rel) {
			return filepath.SkipDir
		}
		blocks := docBlocks(t, root, path)
		if len(blocks) == 0 {
			return nil
		}
		code := append(testCode(t, path, "_test.go"), readmeCode...)
		for _, b := range blocks {
			checked++
			assert.True(t, contains(code, b.lines), "%s: the code block does not stand in a _test.go file of its package:\n\t%s",
				b.where, strings.Join(b.lines, "\n\t"))
		}
		return nil
	})
	require.NoError(t, err)
	t.Logf("%d code blocks in doc comments checked", checked)
	assert.Positive(t, checked)
}

// TestREADMEBlocksCompile checks every ```go block of the repository's
// Markdown files against the Go files of this package and the _test.go
// files the Markdown file names by their path from the repository's root
// (a whole example it points the reader to, compiled by its package's
// tests).
func TestREADMEBlocksCompile(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	dir, err := os.Getwd()
	require.NoError(t, err)
	code := testCode(t, dir, "_test.go")
	named := map[string][]string{}
	eachMarkdown(t, root, func(rel string, data []byte) {
		for _, path := range testFilePath.FindAllString(string(data), -1) {
			if src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path))); err == nil {
				named[rel] = append(named[rel], normalize(string(src))...)
			}
		}
	})
	blocks := readmeBlocks(t, root)
	for _, b := range blocks {
		file, _, _ := strings.Cut(b.where, ":")
		assert.True(t, contains(code, b.lines) || contains(named[file], b.lines),
			"%s: the code block stands neither in testenv/docs nor in a _test.go file the page names:\n\t%s",
			b.where, strings.Join(b.lines, "\n\t"))
	}
	t.Logf("%d code blocks in Markdown files checked", len(blocks))
	assert.Positive(t, len(blocks))
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// prose returns a Markdown text without its code: fenced blocks, indented
// blocks and inline code spans.
func prose(md string) string {
	var b strings.Builder
	inFence := false
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue
		}
		b.WriteString(codeSpan.ReplaceAllString(line, "``"))
		b.WriteByte('\n')
	}
	return b.String()
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// TestMarkdownLinksResolve checks that every relative link of the
// repository's Markdown files names a file or folder that exists.
func TestMarkdownLinksResolve(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	checked := 0
	eachMarkdown(t, root, func(rel string, data []byte) {
		for _, m := range mdLink.FindAllStringSubmatch(prose(string(data)), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			_, err := os.Stat(filepath.Join(root, filepath.Dir(rel), filepath.FromSlash(target)))
			assert.NoError(t, err, "%s links to %s", rel, m[1])
		}
	})
	t.Logf("%d relative links checked", checked)
	assert.Positive(t, checked)
}
