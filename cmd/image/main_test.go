package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeModule writes a module of one main package with the source main
// into a new directory and returns it.
func writeModule(t *testing.T, main string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/op\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644))
	return dir
}

func TestRun(t *testing.T) {
	op := writeModule(t, "package main\n\nfunc main() {}\n")
	lib := writeModule(t, "package lib\n")
	broken := writeModule(t, "package main\n\nfunc main() { undefined() }\n")
	out := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		epoch      string
		wantCode   int
		wantStdout string // a regular expression of the whole output
		wantStderr string
	}{
		{name: "help", args: []string{"-h"}, wantCode: 0, wantStderr: "usage: image [flags] DIR=IMAGE..."},
		{name: "no images", args: []string{"-output", out}, wantCode: 2, wantStderr: "no DIR=IMAGE argument given"},
		{name: "unknown flag", args: []string{"-nope"}, wantCode: 2, wantStderr: "flag provided but not defined"},
		{name: "bad label", args: []string{"-label", "novalue", op + "=example.com/op:dev"}, wantCode: 2, wantStderr: "want KEY=VALUE"},
		{name: "no image name", args: []string{op}, wantCode: 2, wantStderr: "want DIR=IMAGE"},
		{name: "bad image name", args: []string{op + "=Example.com/OP"}, wantCode: 2, wantStderr: "image name"},
		{name: "same output twice", args: []string{op + "=a.example/op:1", op + "=b.example/op:2"}, wantCode: 2, wantStderr: "would both write op"},
		{name: "bad SOURCE_DATE_EPOCH", args: []string{op + "=example.com/op:dev"}, epoch: "soon", wantCode: 2, wantStderr: "SOURCE_DATE_EPOCH"},
		{name: "not a main package", args: []string{"-output", out, lib + "=example.com/lib:dev"}, wantCode: 1, wantStderr: "not a main package"},
		{name: "compile error", args: []string{"-output", out, broken + "=example.com/broken:dev"}, wantCode: 1, wantStderr: "undefined: undefined"},
		{
			name:       "two images",
			args:       []string{"-output", out, "-label", "team=ops", op + "=example.com/op:dev", op + "=example.com/other"},
			epoch:      "1700000000",
			wantCode:   0,
			wantStdout: `^example.com/op:dev sha256:[0-9a-f]{64}\nexample.com/other sha256:[0-9a-f]{64}\n$`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			getenv := func(key string) string {
				if key == "SOURCE_DATE_EPOCH" {
					return tt.epoch
				}
				return ""
			}
			code := run(t.Context(), tt.args, getenv, &stdout, &stderr)
			assert.Equal(t, tt.wantCode, code, stderr.String())
			assert.Regexp(t, regexp.MustCompile(tt.wantStdout), stdout.String())
			if tt.wantStdout == "" {
				assert.Empty(t, stdout.String())
			}
			assert.Contains(t, stderr.String(), tt.wantStderr)
		})
	}
	for _, file := range []string{"op/index.json", "op.tar", "other/index.json", "other.tar"} {
		assert.FileExists(t, filepath.Join(out, file))
	}
}
