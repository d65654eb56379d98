package disk

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// open opens a Store in dir and closes it when the test ends.
func open(t testing.TB, dir string, o Options) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// put stores body under key with head.
func put(t testing.TB, s *Store, key, head string, body []byte) {
	t.Helper()
	w, err := s.Create(key, []byte(head))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// get returns the head and body stored under key, and whether there is
// one.
func get(t testing.TB, s *Store, key string) (string, []byte, bool) {
	t.Helper()
	o, err := s.Get(key)
	if err == ErrNotFound {
		return "", nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	body, err := io.ReadAll(io.NewSectionReader(o, 0, 1<<40))
	if err != nil {
		t.Fatal(err)
	}
	return string(o.Head()), body, true
}

// pattern is a body of n bytes that says which version and key made it.
func pattern(key string, version, n int) []byte {
	seed := []byte(key + "#" + strings.Repeat("v", version%7) + string(rune('a'+version%26)))
	return bytes.Repeat(seed, n/len(seed)+1)[:n]
}

// objectFiles returns the object files under dir and the sum of their
// charges.
func objectFiles(t testing.TB, dir string) (int, int64) {
	t.Helper()
	n, sum := 0, int64(0)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, ok := parseName(d.Name()); ok && !d.IsDir() && filepath.Base(filepath.Dir(path)) != "tmp" {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n++
			sum += charge(fi.Size())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, sum
}

// temps returns the temporary object files under dir/tmp, in every
// Store's directory there.
func temps(t testing.TB, dir string) []string {
	t.Helper()
	list, err := filepath.Glob(filepath.Join(dir, "tmp", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list {
		names = append(names, filepath.Base(p))
	}
	return names
}
