package daemon

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// The pid file holds this process's id and a newline; it is read back,
// moved (the new one written before the old one goes) and removed only
// while it holds this process's id.
func TestPidFile(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pid"), filepath.Join(dir, "b.pid")
	if err := WritePidFile(a); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a); string(got) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("written %q", got)
	}
	if n, err := ReadPidFile(a); n != os.Getpid() || err != nil {
		t.Errorf("ReadPidFile = %d, %v; want %d", n, err, os.Getpid())
	}

	if err := MovePidFile(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old pid file after the move: %v", err)
	}
	if n, _ := ReadPidFile(b); n != os.Getpid() {
		t.Errorf("the new pid file holds %d", n)
	}
	if err := MovePidFile(b, filepath.Join(dir, "missing", "c.pid")); err == nil {
		t.Errorf("a move to a file that cannot be written succeeded")
	}
	if n, _ := ReadPidFile(b); n != os.Getpid() {
		t.Errorf("after a failed move the old pid file holds %d", n)
	}

	writeFile(t, b, "1\n") // another server's since
	RemovePidFile(b)
	if n, err := ReadPidFile(b); n != 1 || err != nil {
		t.Errorf("another process's pid file removed: %d, %v", n, err)
	}
	for _, text := range []string{"", "x\n", "0\n", "-3\n"} {
		writeFile(t, b, text)
		if _, err := ReadPidFile(b); !errors.Is(err, ErrNoPid) {
			t.Errorf("ReadPidFile of %q: %v, want ErrNoPid", text, err)
		}
	}
	if _, err := ReadPidFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPidFile of a missing file: %v", err)
	}
	if err := WritePidFile(a); err != nil {
		t.Fatal(err)
	}
	RemovePidFile(a)
	if _, err := os.Stat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("this process's pid file not removed: %v", err)
	}
}

// SwitchPidFile moves the pid file, or keeps the old one (and says why in
// the log) when the new one cannot be written.
func TestSwitchPidFile(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pid"), filepath.Join(dir, "b.pid")
	if err := WritePidFile(a); err != nil {
		t.Fatal(err)
	}
	log, buf := sluicetest.Logger()
	if got := SwitchPidFile(a, a, log); got != a {
		t.Errorf("same name: in use %q, want %q", got, a)
	}
	bad := filepath.Join(dir, "no-such-dir", "c.pid")
	if got := SwitchPidFile(a, bad, log); got != a || !strings.Contains(buf.String(), "keeping the old one") {
		t.Errorf("unwritable name: in use %q, want %q; log %q", got, a, buf.String())
	}
	if _, err := os.Stat(a); err != nil {
		t.Errorf("the old pid file went with the failed move: %v", err)
	}
	if got := SwitchPidFile(a, b, log); got != b {
		t.Errorf("move: in use %q, want %q", got, b)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("the old pid file is still there: %v", err)
	}
	if pid, err := ReadPidFile(b); err != nil || pid != os.Getpid() {
		t.Errorf("ReadPidFile(new) = %d, %v; want %d", pid, err, os.Getpid())
	}
}
