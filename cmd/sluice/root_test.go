package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// rootEnv returns the environment of a sluice run as root by a test:
// this one's, without SLUICE_ALLOW_ROOT (which TestMain sets) and
// INVOCATION_ID (set when the tests run under systemd), plus extra.
func rootEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_ALLOW_ROOT=") && !strings.HasPrefix(kv, "INVOCATION_ID=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// needRoot skips the test unless it runs as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("what a server started as root does needs root: run the tests as root to check it")
	}
}

// A server started as root refuses to serve a config that names no user
// — from a file, from the flags, as a master with workers, for the demo —
// with exit status 1, a message saying why, and a fix that says what to
// write; under systemd the fix names the unit's User= too.
func TestRootWithoutUserRefused(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	writeConfig(t, file, "listen: 127.0.0.1:0\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n")
	workers := filepath.Join(dir, "workers.yaml")
	writeConfig(t, workers, "listen: 127.0.0.1:0\nworkers: 1\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n")
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"file", nil, []string{"serve", "-c", file},
			[]string{"refusing to serve as root: " + file + " names no user to serve as", "fix=", "user: root to serve as root on purpose"}},
		{"workers", nil, []string{"serve", "-c", workers},
			[]string{"refusing to serve as root: " + workers + " names no user to serve as", "fix=", "user: root to serve as root on purpose"}},
		{"flags", nil, []string{"serve", "--root", dir, "--listen", "127.0.0.1:0"},
			[]string{"refusing to serve as root: no --user names the user to serve as", "fix=", "--user root to serve as root on purpose"}},
		{"flags with workers", nil, []string{"serve", "--root", dir, "--listen", "127.0.0.1:0", "--workers", "1"},
			[]string{"refusing to serve as root: no --user", "--user root"}},
		{"under systemd", []string{"INVOCATION_ID=0123456789abcdef"}, []string{"serve", "-c", file},
			[]string{"refusing to serve as root", "User= and Group= in its unit", "AmbientCapabilities=CAP_NET_BIND_SERVICE"}},
		{"demo on every interface", nil, []string{"demo", "--listen", ":0", "--data", filepath.Join(dir, "demo")},
			[]string{"refusing to serve as root", "run sluice demo as an ordinary user", "on a loopback address", "SLUICE_ALLOW_ROOT=1"}},
		{"allow root is 1, not any value", []string{"SLUICE_ALLOW_ROOT=yes"}, []string{"serve", "-c", file},
			[]string{"refusing to serve as root"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(binary, c.args...)
			cmd.Env = rootEnv(c.env...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit status %d, want 1\n%s", code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "msg=listening") {
				t.Errorf("it served:\n%s", out)
			}
		})
	}
}

// A server started as root serves as root when told so — user: root
// (by name or id), --user root, SLUICE_ALLOW_ROOT=1 — and says so in a
// log line at start (not a warning: it was asked for).
func TestRootOnPurpose(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		user string // the file's user: key, "" for none
		env  []string
		args []string
		want string
	}{
		{"user: root", "root", nil, nil, `msg="serving as root, as the config's user says: every component acts with root's rights" user=root`},
		{"user: 0", "0", nil, nil, `msg="serving as root, as the config's user says: every component acts with root's rights" user=0`},
		{"SLUICE_ALLOW_ROOT=1", "", []string{"SLUICE_ALLOW_ROOT=1"}, nil, `msg="serving as root, as SLUICE_ALLOW_ROOT=1 says: every component acts with root's rights"`},
		{"--user root", "", nil, []string{"serve", "--root", dir, "--listen", "127.0.0.1:0", "--user", "root"}, `msg="serving as root, as the config's user says: every component acts with root's rights" user=root`},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if args == nil {
				file := filepath.Join(t.TempDir(), "site.yaml")
				text := "listen: 127.0.0.1:0\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n"
				if c.user != "" {
					text = "user: \"" + c.user + "\"\n" + text
				}
				writeConfig(t, file, text)
				args = []string{"serve", "-c", file}
			}
			cmd := exec.Command(binary, args...)
			cmd.Env = rootEnv(c.env...)
			s := startCmd(t, cmd)
			if uid, _, _ := procIDs(t, s.cmd.Process.Pid); uid != "0 0 0 0" {
				t.Errorf("Uid %q, want root's", uid)
			}
			if code, _, _ := get(t, "http://"+s.addr+"/"); code != 404 && code != 200 {
				t.Errorf("GET / = %d", code)
			}
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("exit status %d", code)
			}
			if log := s.stderr(); !strings.Contains(log, "level=INFO "+c.want) || strings.Contains(log, "level=WARN") {
				t.Errorf("log lacks %q, or warns:\n%s", c.want, log)
			}
		})
	}
}

// sluice serve --user NAME, started as root, serves the folder as NAME.
func TestServeUserFlag(t *testing.T) {
	u := nobody(t)
	dir := sharedDir(t)
	writeConfig(t, filepath.Join(dir, "index.html"), "hello\n")
	cmd := exec.Command(binary, "serve", "--root", dir, "--listen", "127.0.0.1:0", "--user", "nobody")
	cmd.Env = rootEnv()
	s := startCmd(t, cmd)
	want := strings.Repeat(u.Uid+" ", 3) + u.Uid
	if uid, _, _ := procIDs(t, s.cmd.Process.Pid); uid != want {
		t.Errorf("Uid %q, want %q", uid, want)
	}
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "hello\n" {
		t.Errorf("GET / = %d %q", code, body)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
	if r := sluice(t, "serve", "--print-config", "--user", "nobody"); !strings.Contains(r.stdout, "\nuser: nobody\n") {
		t.Errorf("--print-config --user nobody:\n%s", r.stdout)
	}
	if r := sluice(t, "serve", "-c", "site.yaml", "--user", "nobody"); r.code != 2 || !strings.Contains(r.stderr, "--user describes a config") {
		t.Errorf("-c with --user = %d, %q; want 2 and a usage error", r.code, r.stderr)
	}
}

// A server that does not run as root serves a config that names no user
// as the user it runs as — as under the systemd unit, whose User= makes
// it unprivileged from the start.
func TestUnprivilegedWithoutUser(t *testing.T) {
	u := nobody(t)
	dir := sharedDir(t)
	bin := filepath.Join(dir, "sluice")
	copyFile(t, binary, bin, 0o755)
	for _, workers := range []int{0, 1} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			file := filepath.Join(dir, fmt.Sprintf("site%d.yaml", workers))
			writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nworkers: %d\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n", workers))
			cmd := exec.Command(bin, "serve", "-c", file)
			cmd.Env = rootEnv()
			var uid, gid uint32
			fmt.Sscan(u.Uid, &uid)
			fmt.Sscan(u.Gid, &gid)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
			s := startCmd(t, cmd)
			if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "hi" {
				t.Errorf("GET / = %d %q", code, body)
			}
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("exit status %d\n%s", code, s.stderr())
			}
			if log := s.stderr(); strings.Contains(log, "root") {
				t.Errorf("the log speaks of root:\n%s", log)
			}
		})
	}
}

// With workers, the master stays root: a reload to a config that names
// no user is rejected (its workers would serve as root), and the running
// config keeps serving.
func TestRootReloadWithoutUserRejected(t *testing.T) {
	nobody(t)
	needWorkers(t)
	file := filepath.Join(sharedDir(t), "site.yaml")
	writeConfig(t, file, "listen: 127.0.0.1:0\nworkers: 1\nuser: nobody\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n")
	cmd := exec.Command(binary, "serve", "-c", file)
	cmd.Env = rootEnv()
	s := startCmd(t, cmd)
	s.waitLog(t, "workers ready", 1)
	writeConfig(t, file, "listen: 127.0.0.1:0\nworkers: 1\nroutes:\n  - match: /\n    pipeline: [{text: changed}]\n")
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "refusing to serve as root", 1)
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "hi" {
		t.Errorf("after the rejected reload, GET / = %d %q; want the running config's hi", code, body)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
}

// The demo, started as root on a loopback address (its default), serves
// as root with a warning: the README's first command works for whoever
// runs it, and the demo is reachable from this machine only.
func TestDemoAsRootOnLoopback(t *testing.T) {
	needRoot(t)
	cmd := exec.Command(binary, "demo", "--listen", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "demo"))
	cmd.Env = rootEnv()
	s := startCmd(t, cmd)
	s.waitLog(t, `msg="serving the demo as root: it listens on loopback only`, 1)
	if code, _, _ := get(t, "http://"+s.addr+"/"); code != 200 {
		t.Errorf("GET / = %d", code)
	}
}
