package main

import "syscall"

// childAttributes puts a child in a process group of its own, so that
// the signal handler can kill it with what it runs, and has the kernel
// kill it when apigen dies, by a SIGKILL too.
func childAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
