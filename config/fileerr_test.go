package config

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
)

// FileFix says what to do about each way a file a config names can fail
// to open, through any wrapping, and nothing about other errors.
func TestFileFix(t *testing.T) {
	path := func(err error) error { return &fs.PathError{Op: "open", Path: "/etc/sluice/site.key", Err: err} }
	for _, c := range []struct {
		err  error
		want string // "" for no fix
	}{
		{path(syscall.ENOENT), "correct the path, or create the file"},
		{fmt.Errorf("tls.key: %w", path(syscall.ENOENT)), "correct the path"},
		{path(syscall.EISDIR), "name a file, not a directory"},
		{path(syscall.ENOTDIR), "a part of the path is a file, not a directory"},
		{path(syscall.EACCES), "this process runs as " + processUser() + ", which the permissions of the file or of a directory above it shut out: give that user access"},
		{path(syscall.EPERM), "this process runs as "},
		{path(syscall.EIO), ""},
		{fmt.Errorf("something else"), ""},
		{nil, ""},
	} {
		got := FileFix(c.err)
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("FileFix(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if u := processUser(); !strings.Contains(u, fmt.Sprintf("uid %d", os.Geteuid())) {
		t.Errorf("processUser() = %q, want the uid %d in it", u, os.Geteuid())
	}
}

// A file a component fails to open (an htpasswd file, a files root, an
// access log's directory) gets FileFix's advice in the config's error,
// as the config's own files do.
func TestComponentFileErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/site.yaml"
	data := "listen: 127.0.0.1:0\naccess_log: " + dir + "/no/such/dir/access.log\nroutes:\n  - match: /\n    pipeline:\n      - basic_auth: {htpasswd: ./missing.htpasswd}\n      - files: ./nope\n"
	_, err := new(Loader).Parse(file, []byte(data))
	if err == nil {
		t.Fatal("a config naming missing files parsed")
	}
	for _, want := range []string{
		"site.yaml:2:1: access_log: open " + dir + "/no/such/dir/access.log: no such file or directory: correct the path",
		"site.yaml:6:9: basic_auth: open " + dir + "/missing.htpasswd: no such file or directory: correct the path, or create the file (a relative path starts at the config file's directory)",
		"site.yaml:7:9: files: root " + dir + "/nope: no such file or directory: correct the path",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
