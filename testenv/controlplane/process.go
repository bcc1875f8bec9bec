package controlplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one component running in its own process group, with its
// output in a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the process has been waited for
	waitErr error         // valid after done is closed
}

// startProcess starts bin with args in a new process group. The process gets
// SIGKILL if the thread that started it dies, so a crashed test binary leaves
// nothing behind; Stop is the orderly way out.
func startProcess(name, bin string, args []string, env []string, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// pid is the process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended; call only after done is closed.
func (p *process) exitError() error {
	if p.waitErr != nil {
		return fmt.Errorf("%s exited: %w", p.name, p.waitErr)
	}
	return fmt.Errorf("%s exited", p.name)
}

// stop sends SIGTERM to the process group, waits up to grace, then sends
// SIGKILL to the group and waits for the process to be reaped. It returns
// once the process is gone.
func (p *process) stop(grace time.Duration) {
	pgid := p.pid()
	if !p.exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	// Whatever is left in the group, including the leader, goes now.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
}

// tail returns up to n final lines of the process log.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	return lastLines(string(data), n)
}

func lastLines(s string, n int) string {
	if n <= 0 {
		return s
	}
	end := len(s)
	for end > 0 && s[end-1] == '\n' {
		end--
	}
	count := 0
	for i := end - 1; i >= 0; i-- {
		if s[i] == '\n' {
			count++
			if count == n {
				return s[i+1 : end]
			}
		}
	}
	return s[:end]
}

// processAlive reports whether a process with the pid exists and is not a
// zombie.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	// A zombie still answers kill(0); its state in /proc says Z.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' && i+2 < len(stat) {
			return stat[i+2] != 'Z' && stat[i+2] != 'X'
		}
	}
	return true
}

// copyTail writes a header and the last n lines of the log to w.
func (p *process) copyTail(w io.Writer, n int) {
	fmt.Fprintf(w, "===== %s (pid %d, last %d lines of %s) =====\n%s\n", p.name, p.pid(), n, p.logPath, p.tail(n))
}

// ownsPort returns nil when the process pid listens on 127.0.0.1:port,
// and an error saying who does otherwise. A port chosen free may be taken by
// another process before the component binds it; this tells the component's
// own socket from someone else's. It reads /proc, so it sees only the
// sockets of this user's processes.
func ownsPort(pid, port int) error {
	inodes := listeningInodes(port)
	if len(inodes) == 0 {
		return fmt.Errorf("nothing listens on 127.0.0.1:%d yet", port)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return fmt.Errorf("reading the sockets of pid %d: %w", pid, err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && inodes[target] {
			return nil
		}
	}
	return fmt.Errorf("127.0.0.1:%d is held by another process, not pid %d", port, pid)
}

// listeningInodes returns the socket inodes ("socket:[N]") listening on
// 127.0.0.1:port, from /proc/net/tcp, which prints the address as the hex of
// its four bytes read as one native-endian word.
func listeningInodes(port int) map[string]bool {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil
	}
	local := fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32([]byte{127, 0, 0, 1}), port)
	out := map[string]bool{}
	for line := range strings.SplitSeq(string(data), "\n") {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) >= 10 && f[1] == local && f[3] == "0A" {
			out["socket:["+f[9]+"]"] = true
		}
	}
	return out
}
