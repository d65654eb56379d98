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
