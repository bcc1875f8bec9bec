package image

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Compile builds the main package in dir into the file out: a static
// binary for linux and opts.Arch, from the module dir is in, with
//
//	CGO_ENABLED=0 GOOS=linux GOARCH=<arch> go build -trimpath -buildvcs=auto -ldflags=-buildid= -o <out> .
//
// and the rest of the environment as it is. -buildvcs=auto keeps Go's VCS
// stamp (the commit, its time, whether the tree was modified) even when
// GOFLAGS turns it off, so that the binary can tell its version. It fails
// if dir is not a main package.
func Compile(ctx context.Context, dir, out string, opts Options) error {
	goCmd := opts.Go
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=auto", "-ldflags=-buildid=", "-o", out, ".")
	cmd.Dir = dir
	// Later entries win over the same variables inherited from os.Environ.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+opts.arch())
	var output bytes.Buffer
	if opts.BuildOutput != nil {
		cmd.Stdout, cmd.Stderr = opts.BuildOutput, opts.BuildOutput
	} else {
		cmd.Stdout, cmd.Stderr = &output, &output
	}
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(output.String()); msg != "" {
			return fmt.Errorf("go build in %s: %w:\n%s", dir, err, msg)
		}
		return fmt.Errorf("go build in %s: %w", dir, err)
	}
	// go build -o writes an archive for a package that is not main.
	if _, err := buildinfo.ReadFile(out); err != nil {
		return fmt.Errorf("go build in %s wrote no Go executable (not a main package?): %w", dir, err)
	}
	return nil
}
