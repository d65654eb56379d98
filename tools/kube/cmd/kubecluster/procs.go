package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process. Every child gets Pdeathsig SIGKILL, so none
// outlives kubecluster even when kubecluster itself is killed.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, valid after done is closed
}

// supervisor starts processes and stops them in reverse order. Its methods
// are safe for concurrent use.
type supervisor struct {
	logDir string
	died   chan *proc // receives a process that exited before stopAll

	mu       sync.Mutex
	procs    []*proc
	stopping bool
}

func newSupervisor(logDir string) *supervisor {
	return &supervisor{logDir: logDir, died: make(chan *proc, 16)}
}

// start runs bin with args, its output going to logDir/name.log.
func (s *supervisor) start(name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(s.logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// A process group of its own: a terminal's Ctrl-C reaches kubecluster,
	// which stops the processes in order, and not each of them at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, fmt.Errorf("start %s: shutting down", name)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s.procs = append(s.procs, p)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if !stopping {
			select {
			case s.died <- p:
			default:
			}
		}
	}()
	return p, nil
}

// stopAll sends SIGTERM to every process, newest first, waits up to grace
// for each, then kills what is left.
func (s *supervisor) stopAll(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	procs := append([]*proc(nil), s.procs...)
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		stopProc(procs[i], grace)
	}
}

// stopProc ends one process: SIGTERM, then SIGKILL after grace.
func stopProc(p *proc, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last n lines of a process's log, for error messages.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString("  | ")
		sb.Write(l)
		sb.WriteByte('\n')
	}
	return sb.String()
}
