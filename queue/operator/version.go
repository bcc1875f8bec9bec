package operator

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// BuildVersion describes the running binary from the build information that
// go build records in it (runtime/debug.ReadBuildInfo). It is what
// --version prints: one "key: value" line each, in this order,
//
//	path: the main package, such as github.com/ctrlkit/ctrlkit/examples/foo
//	module: the main module and its version
//	revision: the VCS commit
//	time: the commit's time (RFC 3339)
//	modified: true if the working tree had uncommitted changes
//	go: the Go version and the platform it runs on, such as go1.26.0 linux/amd64
//
// revision, time and modified appear only when go build stamped them (a
// build inside a repository with -buildvcs not false). A binary without
// build information gets path "unknown" and no module line. The text ends
// with a newline.
func BuildVersion() string {
	info, _ := debug.ReadBuildInfo() // nil without build information
	return describeBuild(info)
}

// describeBuild formats info as BuildVersion documents; info may be nil.
func describeBuild(info *debug.BuildInfo) string {
	var b strings.Builder
	line := func(key, value string) { fmt.Fprintf(&b, "%s: %s\n", key, value) }
	goVersion := runtime.Version()
	if info == nil {
		line("path", "unknown (the binary has no build information)")
	} else {
		line("path", info.Path)
		line("module", strings.TrimSpace(info.Main.Path+" "+info.Main.Version))
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		for _, s := range []struct{ key, setting string }{
			{"revision", "vcs.revision"}, {"time", "vcs.time"}, {"modified", "vcs.modified"},
		} {
			if v, ok := settings[s.setting]; ok {
				line(s.key, v)
			}
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
	}
	line("go", goVersion+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return b.String()
}
