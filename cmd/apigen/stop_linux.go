package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childAttributes puts a child in a process group of its own, so that
// the signal handler can kill it with what it runs, and has the kernel
// kill it when apigen dies, by a SIGKILL too.
func childAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// becomeSubreaper makes apigen the child subreaper of what it starts: a
// process of the run whose parent dies (what a killed go command started)
// becomes apigen's child instead of init's, so that killDescendants finds
// it. It reports whether the kernel agreed.
//
// The processes already below apigen when it starts (a script's
// background job, handed over by a shell that execs apigen) are not the
// run's: killDescendants leaves them, and their children while they run,
// alone. A child such a job leaves behind when it exits becomes apigen's
// and is killed with the run's.
func becomeSubreaper() bool {
	inherited = map[int]bool{}
	for _, pid := range descendants(os.Getpid(), nil) {
		inherited[pid] = true
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	return errno == 0
}

// inherited are the processes below apigen when it started, set once by
// becomeSubreaper before the signal handler starts.
var inherited map[int]bool

// killDescendants kills every live process below apigen in the process
// (but those it inherited, see becomeSubreaper)
// tree: the children it started itself or through a library (the go list
// commands of golang.org/x/tools/go/packages), what they started, and,
// apigen being their subreaper (see becomeSubreaper), the processes
// orphaned by those it killed, which it finds as its children on the
// next pass. It returns when none is left, or after timeout.
func killDescendants(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		pids := descendants(os.Getpid(), inherited)
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		// The killed processes turn into zombies, which descendants
		// skips; their orphans are apigen's children by then.
		time.Sleep(5 * time.Millisecond)
	}
}

// descendants returns the live processes (not zombies) below pid in the
// process tree, from /proc, but for those of spare and what is below
// them.
func descendants(pid int, spare map[int]bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	zombie := map[int]bool{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(fields[1])
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], p)
		zombie[p] = fields[0] == "Z" || fields[0] == "X"
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if spare[c] {
				continue
			}
			if !zombie[c] {
				out = append(out, c)
			}
			queue = append(queue, c)
		}
	}
	return out
}
