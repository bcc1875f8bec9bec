//go:build unix

package main

import "syscall"

// killGroup kills the process group whose leader is pid.
func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}
