package main_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// activated returns a command that runs sluice with args as systemd's
// socket activation does: the listening socket of ln as descriptor 3,
// LISTEN_FDS=1, LISTEN_FDNAMES=http, and LISTEN_PID set to the process's
// own id by a shell that then executes sluice.
func activated(t *testing.T, ln net.Listener, args ...string) *exec.Cmd {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("socket activation is systemd's, on Linux")
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd := exec.Command("sh", append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, binary}, args...)...)
	cmd.Env = append(os.Environ(), "LISTEN_FDS=1", "LISTEN_FDNAMES=http")
	cmd.ExtraFiles = []*os.File{f}
	return cmd
}

// A server started by socket activation serves the socket it was passed
// for the address its config lists, in one process and, handed on by the
// master, in its workers. The test keeps the socket open itself: a
// server that opened the address again would fail (address in use).
func TestSocketActivation(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			file := filepath.Join(t.TempDir(), "site.yaml")
			writeConfig(t, file, fmt.Sprintf("listen: %s\nworkers: %d\nroutes:\n  - match: /\n    pipeline: [{text: activated}]\n", ln.Addr(), workers))
			s := startCmd(t, activated(t, ln, "serve", "-c", file))
			if workers > 0 {
				s.waitLog(t, "workers ready", 1)
			}
			for range 4 {
				if resp, body := sluicetest.Get(t, "http://"+ln.Addr().String()+"/"); resp.StatusCode != 200 || body != "activated" {
					t.Fatalf("GET = %d %q", resp.StatusCode, body)
				}
			}
			if strings.Contains(s.stderr(), "level=WARN") {
				t.Errorf("warnings:\n%s", s.stderr())
			}
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("exit status %d\n%s", code, s.stderr())
			}
		})
	}
}

// A socket passed for an address the config does not list is warned
// about; the config's address is opened as usual. (A port 0 written
// matches any port: the config's host differs.)
func TestSocketActivationUnmatched(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	file := filepath.Join(t.TempDir(), "site.yaml")
	writeConfig(t, file, "listen: 127.0.0.2:0\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n")
	s := startCmd(t, activated(t, ln, "serve", "-c", file))
	want := fmt.Sprintf("socket activation passed a socket for %s (http), which listen does not list", ln.Addr())
	if !strings.Contains(s.stderr(), want) {
		t.Errorf("log lacks %q:\n%s", want, s.stderr())
	}
	if resp, _ := sluicetest.Get(t, "http://"+s.addr+"/"); resp.StatusCode != 200 {
		t.Errorf("GET = %d", resp.StatusCode)
	}
	s.stop(t, syscall.SIGTERM)
}

// notifySocket is a service manager's notification socket, as systemd
// gives a Type=notify service in $NOTIFY_SOCKET.
type notifySocket struct {
	c    *net.UnixConn
	path string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &notifySocket{c: c, path: path}
}

// next returns the next message, waiting for it for up to 20 seconds.
func (n *notifySocket) next(t *testing.T) string {
	t.Helper()
	buf := make([]byte, 4096)
	n.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	k, err := n.c.Read(buf)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return string(buf[:k])
}

// expect reads the next message and checks that it starts with want.
func (n *notifySocket) expect(t *testing.T, want string) string {
	t.Helper()
	got := n.next(t)
	if !strings.HasPrefix(got, want) {
		t.Fatalf("notification %q, want %q", got, want)
	}
	return got
}

// The server tells the service manager READY=1 once it serves,
// RELOADING=1 (with the monotonic clock) then READY=1 around a reload,
// and STOPPING=1 on SIGTERM; with workers the master does, the workers
// not at all.
func TestNotify(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			n := listenNotify(t)
			file := filepath.Join(t.TempDir(), "site.yaml")
			writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nworkers: %d\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n", workers))
			cmd := exec.Command(binary, "serve", "-c", file)
			cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+n.path)
			s := startCmd(t, cmd)
			n.expect(t, "READY=1")
			if workers > 0 {
				s.waitLog(t, "workers ready", 1)
			}
			s.cmd.Process.Signal(syscall.SIGHUP)
			got := n.expect(t, "RELOADING=1\nMONOTONIC_USEC=")
			if usec, err := strconv.ParseInt(strings.TrimPrefix(got, "RELOADING=1\nMONOTONIC_USEC="), 10, 64); err != nil || usec <= 0 {
				t.Errorf("RELOADING message %q: no monotonic time", got)
			}
			n.expect(t, "READY=1")
			s.waitLog(t, "msg=reloaded", 1)
			s.cmd.Process.Signal(syscall.SIGTERM)
			n.expect(t, "STOPPING=1")
			if code := s.wait(t); code != 0 {
				t.Errorf("exit status %d\n%s", code, s.stderr())
			}
		})
	}
}

// After a binary upgrade the old master names the new one the service's
// main process (MAINPID=), and says nothing else; the new master does
// not say READY=1 for its start, but speaks for itself from then on.
func TestNotifyUpgrade(t *testing.T) {
	needWorkers(t)
	n := listenNotify(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "sluice")
	copyFile(t, binary, bin, 0o755)
	pidFile := filepath.Join(dir, "sluice.pid")
	file := filepath.Join(dir, "w.yaml")
	writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nworkers: 1\npid_file: %s\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n", pidFile))
	t.Cleanup(func() {
		if pid := readPid(pidFile); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cmd := exec.Command(bin, "serve", "-c", file)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+n.path)
	s := startCmd(t, cmd)
	n.expect(t, "READY=1")
	s.cmd.Process.Signal(syscall.SIGUSR2)
	got := n.expect(t, "MAINPID=")
	s.cmd.Wait()
	newPid := readPid(pidFile)
	if got != "MAINPID="+strconv.Itoa(newPid) || newPid == s.cmd.Process.Pid {
		t.Fatalf("notification %q; the pid file names %d, the old master was %d", got, newPid, s.cmd.Process.Pid)
	}
	syscall.Kill(newPid, syscall.SIGHUP)
	n.expect(t, "RELOADING=1")
	n.expect(t, "READY=1")
	syscall.Kill(newPid, syscall.SIGTERM)
	n.expect(t, "STOPPING=1")
	<-s.done // every process of both masters has closed the log
}
