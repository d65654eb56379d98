package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// procIDs returns the Uid, Gid and Groups lines of /proc/PID/status.
func procIDs(t *testing.T, pid int) (uid, gid, groups string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "Uid":
			uid = strings.Join(strings.Fields(v), " ")
		case "Gid":
			gid = strings.Join(strings.Fields(v), " ")
		case "Groups":
			groups = strings.Join(strings.Fields(v), " ")
		}
	}
	return uid, gid, groups
}

// nobody returns the user nobody, skipping the test unless it runs as
// root on a system that has that user.
func nobody(t *testing.T) *user.User {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the user a process runs as is read from /proc, on Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("switching user needs root: run the tests as root to check user:")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	return u
}

// sharedDir returns a new directory every user may read, for files a
// process running as nobody opens; it is removed when the test ends.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sluice-user-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// With user: nobody, a server started as root serves as nobody — a
// single process once its listener and log files are open, with workers
// each worker while the master stays root — and still reopens its access
// log, which it was given, on SIGUSR1.
func TestUser(t *testing.T) {
	u := nobody(t)
	want := u.Uid + " " + u.Uid + " " + u.Uid + " " + u.Uid
	wantGid := u.Gid + " " + u.Gid + " " + u.Gid + " " + u.Gid
	for _, workers := range []int{0, 1} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			dir := sharedDir(t)
			access := filepath.Join(dir, "access.log")
			file := filepath.Join(t.TempDir(), "site.yaml")
			writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nworkers: %d\nuser: nobody\naccess_log: {file: %s, format: common}\n"+
				"routes:\n  - match: /\n    pipeline: [{text: hi}]\n", workers, access))
			s := start(t, "serve", "-c", file)
			pid := s.cmd.Process.Pid
			if workers > 0 {
				s.waitLog(t, "workers ready", 1)
				if uid, _, _ := procIDs(t, pid); uid != "0 0 0 0" {
					t.Errorf("the master's Uid: %s, want root's", uid)
				}
				pid = s.workerPids()[1]
			}
			uid, gid, groups := procIDs(t, pid)
			if uid != want || gid != wantGid || groups != u.Gid {
				t.Errorf("the serving process: Uid %q Gid %q Groups %q; want %q, %q, %q", uid, gid, groups, want, wantGid, u.Gid)
			}
			if resp, body := sluicetest.Get(t, "http://"+s.addr+"/before"); resp.StatusCode != 200 || body != "hi" {
				t.Fatalf("GET /before = %d %q", resp.StatusCode, body)
			}
			s.cmd.Process.Signal(syscall.SIGUSR1)
			s.waitLog(t, "log files reopened", 1+workers)
			sluicetest.Get(t, "http://"+s.addr+"/after")
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Fatalf("exit status %d\n%s", code, s.stderr())
			}
			if strings.Contains(s.stderr(), "cannot reopen") {
				t.Errorf("the access log was not reopened:\n%s", s.stderr())
			}
			b, err := os.ReadFile(access)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "GET /before ") || !strings.Contains(string(b), "GET /after ") {
				t.Errorf("access log:\n%s", b)
			}
		})
	}
}

// A server that does not run as root refuses to start when user: names
// another user, with the reason, in one process and as a master.
func TestUserRefused(t *testing.T) {
	u := nobody(t)
	dir := sharedDir(t)
	bin := filepath.Join(dir, "sluice")
	copyFile(t, binary, bin, 0o755)
	for _, workers := range []int{0, 1} {
		file := filepath.Join(dir, fmt.Sprintf("site%d.yaml", workers))
		writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nworkers: %d\nuser: root\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n", workers))
		cmd := exec.Command(bin, "serve", "-c", file)
		var uid, gid uint32
		fmt.Sscan(u.Uid, &uid)
		fmt.Sscan(u.Gid, &gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 ||
			!strings.Contains(string(out), "only root can switch to uid 0") {
			t.Errorf("workers=%d, as nobody with user: root: %v\n%s", workers, err, out)
		}
	}
}
