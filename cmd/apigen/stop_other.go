//go:build unix && !linux

package main

import "syscall"

// childAttributes puts a child in a process group of its own, so that
// the signal handler can kill it with what it runs.
func childAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
