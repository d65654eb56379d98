package fastcgi

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sluice-server/sluice/upstream"
)

// age makes the result kept for path d older, as if d had passed.
func age(cl *Client, path string, d time.Duration) {
	cl.resolved.mu.Lock()
	e := cl.resolved.m[path]
	e.at -= upstream.Instant(d)
	e.full -= upstream.Instant(d)
	cl.resolved.m[path] = e
	cl.resolved.mu.Unlock()
}

// keptFull returns when the result kept for path was worked out.
func keptFull(cl *Client, path string) upstream.Instant {
	cl.resolved.mu.RLock()
	defer cl.resolved.mu.RUnlock()
	return cl.resolved.m[path].full
}

// TestResolveRecheck changes a script's file in each way that matters
// after Resolve found it and checks that the change is seen once the
// result's second is up: a file removed, replaced by another, by a link
// out of the root or to a non-script, moved under no_exec by a renamed
// directory, or made a directory; and that an unchanged file is kept on
// revalidate's word (on a local file system) until resolveFull.
func TestResolveRecheck(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write := func(name string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("<?php"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "s.php"), []byte("<?php"), 0o644)
	write("up/a.jpg")
	cl, err := New(Options{Options: upstream.Options{Upstreams: []string{"unix:/nonexistent"}, MaxConns: 1},
		Root: root, NoExec: []string{"/up/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	local := runtime.GOOS == "linux" && localFS(root)

	for _, c := range []struct {
		name   string
		change func(p string) // p: the script's file
		want   error          // nil: still runs
	}{
		{"unchanged", func(string) {}, nil},
		{"removed", func(p string) { os.Remove(p) }, ErrNotFound},
		{"replaced by another script", func(p string) {
			os.WriteFile(p+".new", []byte("<?php"), 0o644)
			os.Rename(p+".new", p)
		}, nil},
		{"a link out of the root", func(p string) {
			os.Remove(p)
			os.Symlink(filepath.Join(outside, "s.php"), p)
		}, ErrNotFound},
		{"a link to a non-script", func(p string) {
			os.Remove(p)
			os.Symlink("../up/a.jpg", p)
		}, ErrForbidden},
		{"made a directory", func(p string) {
			os.Remove(p)
			os.Mkdir(p, 0o755)
		}, ErrNotFound},
		{"its directory a link to no_exec", func(p string) {
			d := filepath.Dir(p)
			os.Rename(d, d+".old")
			os.MkdirAll(filepath.Join(root, "up", "d"), 0o755)
			os.WriteFile(filepath.Join(root, "up", "d", "x.php"), []byte("<?php"), 0o644)
			os.Symlink("up/d", d)
		}, ErrForbidden},
		{"chmod", func(p string) { os.Chmod(p, 0o600) }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(root, "d"))
			os.RemoveAll(filepath.Join(root, "d.old"))
			os.RemoveAll(filepath.Join(root, "up", "d"))
			write("d/x.php")
			const path = "/d/x.php"
			cl.resolved.mu.Lock()
			delete(cl.resolved.m, path)
			cl.resolved.mu.Unlock()
			if _, err := cl.Resolve(path); err != nil {
				t.Fatal(err)
			}
			first := keptFull(cl, path)
			c.change(filepath.Join(root, "d", "x.php"))
			// Within the second the result stands, whatever changed.
			if _, err := cl.Resolve(path); err != nil {
				t.Fatalf("within the second: %v", err)
			}
			age(cl, path, resolveTTL)
			first -= upstream.Instant(resolveTTL)
			_, err := cl.Resolve(path)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("after the second: got %v, want %v", err, c.want)
			}
			again := keptFull(cl, path) != first
			if c.name == "unchanged" && local && again {
				t.Error("an unchanged script on a local file system was resolved again, not revalidated")
			}
			if c.name != "unchanged" && !again {
				t.Error("a changed script was not resolved again")
			}
		})
	}

	// Past resolveFull an unchanged script is resolved again all the same.
	write("f/x.php")
	if _, err := cl.Resolve("/f/x.php"); err != nil {
		t.Fatal(err)
	}
	age(cl, "/f/x.php", resolveFull)
	before := keptFull(cl, "/f/x.php")
	if _, err := cl.Resolve("/f/x.php"); err != nil {
		t.Fatal(err)
	}
	if keptFull(cl, "/f/x.php") == before {
		t.Error("a result kept for resolveFull was not resolved again")
	}
}
