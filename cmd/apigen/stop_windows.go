package main

import (
	"os"
	"syscall"
	"time"
)

// childAttributes has no process groups to set up on Windows.
func childAttributes() *syscall.SysProcAttr { return nil }

// killGroup kills the process pid (Windows has no process groups to kill).
func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// becomeSubreaper does nothing: only Linux has child subreapers.
func becomeSubreaper() bool { return false }

// killDescendants does nothing on Windows.
func killDescendants(time.Duration) {}
