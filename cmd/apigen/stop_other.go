//go:build unix && !linux

package main

import (
	"syscall"
	"time"
)

// childAttributes puts a child in a process group of its own, so that
// the signal handler can kill it with what it runs.
func childAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// becomeSubreaper does nothing: only Linux has child subreapers.
func becomeSubreaper() bool { return false }

// killDescendants does nothing: without a subreaper apigen cannot find
// the processes its children started.
func killDescendants(time.Duration) {}
