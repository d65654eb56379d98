package sluicetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Backdate sets the access and modification times of every file and
// directory under dir, dir included, to age before now, as a deployed
// site's files are. A file server sends Last-Modified only once the
// second a file changed in is over (RFC 9110 §8.8.2), so a test that
// writes a site and asks for its validators at once backdates it first.
// It fails t on any error.
func Backdate(t testing.TB, dir string, age time.Duration) {
	t.Helper()
	then := time.Now().Add(-age)
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, then, then)
	})
	if err != nil {
		t.Fatal(err)
	}
}
