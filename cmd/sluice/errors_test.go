package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// The mistakes a new user makes with the files a config names — a
// directory where a file belongs, a path that does not exist — end the
// command with exit status 1 and a message that says what to write
// instead.
func TestFileErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	config := func(name, top string) string {
		file := filepath.Join(dir, name+".yaml")
		writeConfig(t, file, "listen: 127.0.0.1:0\n"+top+"routes:\n  - match: /\n    pipeline: [{text: hi}]\n")
		return file
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"log output is a directory", []string{"serve", "-c", config("log", "log: {output: "+sub+"}\n")},
			[]string{`msg="cannot open the log"`, `fix="name a file, not a directory (one in it, say)"`}},
		{"pid_file is a directory", []string{"serve", "-c", config("pid", "pid_file: "+sub+"\n")},
			[]string{`msg="cannot write the pid file"`, `fix="pid_file names a directory: name a file in it (DIR/sluice.pid), with pid_file or --pid-file"`}},
		{"pid_file in a missing directory", []string{"serve", "-c", config("piddir", "pid_file: "+filepath.Join(dir, "missing", "sluice.pid")+"\n")},
			[]string{`fix="its directory does not exist: create it, or change pid_file (or --pid-file)"`}},
		{"serve -c a directory", []string{"serve", "-c", sub},
			[]string{`msg="cannot load the config"`, `is a directory" fix="name a file, not a directory`}},
		{"serve -c a missing file", []string{"serve", "-c", filepath.Join(dir, "missing.yaml")},
			[]string{`no such file or directory" fix="correct the path, or create the file"`}},
		{"check -c a missing file", []string{"check", "-c", filepath.Join(dir, "missing.yaml")},
			[]string{"sluice: open " + filepath.Join(dir, "missing.yaml") + ": no such file or directory: correct the path, or create the file\n"}},
		{"check a missing certificate", []string{"check", "-c", tlsConfig(t, dir, "missing.crt", "missing.key")},
			[]string{"tls.cert: open " + filepath.Join(dir, "missing.crt") + ": no such file or directory: correct the path, or create the file (a relative path starts at the config file's directory)"}},
		{"check a sqlite file in a missing directory", []string{"check", "-c", config("db", "databases:\n  main: {driver: sqlite, dsn: nodir/site.db}\n")},
			[]string{"databases.main.dsn: directory " + filepath.Join(dir, "nodir") + " does not exist: create it, or correct the path"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := sluice(t, c.args...)
			if r.code != 1 {
				t.Errorf("exit status %d, want 1\n%s", r.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// tlsConfig writes a config whose listener serves TLS with cert and key
// (relative to dir) and returns its path.
func tlsConfig(t *testing.T, dir, cert, key string) string {
	t.Helper()
	file := filepath.Join(dir, "tls.yaml")
	writeConfig(t, file, fmt.Sprintf("listen:\n  - address: 127.0.0.1:0\n    tls: {cert: %s, key: %s}\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n", cert, key))
	return file
}

// A key only root may read, checked by a server that runs unprivileged
// (as under the systemd unit), names the user shut out and the fix.
func TestUnreadableKeySaysWhichUser(t *testing.T) {
	u := nobody(t)
	dir := sharedDir(t)
	bin := filepath.Join(dir, "sluice")
	copyFile(t, binary, bin, 0o755)
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "site.example")
	if err := os.Chmod(filepath.Join(dir, "site.example.key"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := tlsConfig(t, dir, "site.example.crt", "site.example.key")
	cmd := exec.Command(bin, "check", "-c", file)
	var uid, gid uint32
	fmt.Sscan(u.Uid, &uid)
	fmt.Sscan(u.Gid, &gid)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	out, _ := cmd.CombinedOutput()
	want := "tls.key: open " + filepath.Join(dir, "site.example.key") + ": permission denied: this process runs as user nobody (uid " + u.Uid +
		"), which the permissions of the file or of a directory above it shut out: give that user access"
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), want) {
		t.Errorf("exit status %d, output:\n%s\nwant %s", cmd.ProcessState.ExitCode(), out, want)
	}
}
