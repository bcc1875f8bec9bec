package operator

import (
	"bytes"
	"context"
	"flag"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDescribeBuild(t *testing.T) {
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{
			name: "stamped by the VCS",
			info: &debug.BuildInfo{
				GoVersion: "go1.26.0",
				Path:      "example.com/op/cmd/op",
				Main:      debug.Module{Path: "example.com/op", Version: "v1.2.3"},
				Settings: []debug.BuildSetting{
					{Key: "-trimpath", Value: "true"},
					{Key: "vcs.modified", Value: "false"},
					{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
					{Key: "vcs", Value: "git"},
					{Key: "vcs.revision", Value: "0123456789abcdef"},
				},
			},
			want: "path: example.com/op/cmd/op\nmodule: example.com/op v1.2.3\nrevision: 0123456789abcdef\n" +
				"time: 2026-01-02T03:04:05Z\nmodified: false\ngo: go1.26.0" + platform,
		},
		{
			name: "without VCS information",
			info: &debug.BuildInfo{GoVersion: "go1.26.0", Path: "example.com/op", Main: debug.Module{Path: "example.com/op", Version: "(devel)"}},
			want: "path: example.com/op\nmodule: example.com/op (devel)\ngo: go1.26.0" + platform,
		},
		{
			name: "without a Go version",
			info: &debug.BuildInfo{Path: "example.com/op", Main: debug.Module{Path: "example.com/op"}},
			want: "path: example.com/op\nmodule: example.com/op\ngo: " + runtime.Version() + platform,
		},
		{
			name: "no build information",
			want: "path: unknown (the binary has no build information)\ngo: " + runtime.Version() + platform,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, describeBuild(tt.info))
		})
	}
}

// --version prints what the test binary's build information holds (a test
// binary has no VCS stamp) to standard output, and returns 0 without
// checking the flags or calling run.
func TestMainVersion(t *testing.T) {
	var out, stderr bytes.Buffer
	stdout = &out
	t.Cleanup(func() { stdout = os.Stdout })
	fs := flag.NewFlagSet("op", flag.ContinueOnError)
	var f Flags
	f.Bind(fs)
	called := false
	run := func(context.Context) error { called = true; return nil }
	// An invalid --shutdown-timeout would fail Validate: --version comes first.
	code := f.Main(fs, []string{"--version", "--shutdown-timeout=0s"}, &stderr, run, nil)

	assert.Equal(t, 0, code)
	assert.False(t, called, "run is not called")
	assert.Empty(t, stderr.String())
	info, ok := debug.ReadBuildInfo()
	require.True(t, ok, "test binaries carry build information")
	assert.Equal(t, BuildVersion(), out.String())
	assert.Contains(t, out.String(), "path: "+info.Path+"\n")
	assert.Contains(t, out.String(), "module: github.com/ctrlkit/ctrlkit")
	assert.Contains(t, out.String(), "go: "+info.GoVersion+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n")
}
