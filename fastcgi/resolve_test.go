package fastcgi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/upstream"
)

// FuzzResolve checks Resolve's promises for any path: a script it
// returns is a regular file under the root whose name ends in .php, named
// by the path's first .php segment, with no dot-file segment and no
// control byte anywhere, and not under no_exec.
func FuzzResolve(f *testing.F) {
	root := f.TempDir()
	outside := f.TempDir()
	for _, name := range []string{"index.php", "a/b.php", "a/index.php", "up/x.php", ".h/x.php", "a/.x.php", "dir.php/x.php", "a b/c.php"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("<?php"), 0o644)
	}
	os.WriteFile(filepath.Join(outside, "s.php"), []byte("<?php"), 0o644)
	os.Symlink(filepath.Join(outside, "s.php"), filepath.Join(root, "out.php"))
	os.Symlink(outside, filepath.Join(root, "outdir"))
	os.Symlink("b.php", filepath.Join(root, "a/in.php"))
	cl, err := New(Options{Options: upstream.Options{Upstreams: []string{"unix:/nonexistent"}, MaxConns: 1},
		Root: root, NoExec: []string{"/up/"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cl.Close() })
	for _, p := range []string{"/", "/a/b.php/x", "/out.php", "/outdir/s.php", "/up/x.php", "/.h/x.php", "/a/.x.php",
		"/a/in.php", "/dir.php/x.php", "/a b/c.php", "/a/b.php\n", "/a/../index.php", "//index.php"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		s, _, err := cl.resolve(path)
		if err != nil {
			return
		}
		if strings.ContainsFunc(path, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			t.Fatalf("%q: resolved with a control byte", path)
		}
		full := s.Name + s.PathInfo
		if full != path && full != path+"index.php" {
			t.Fatalf("%q: name %q and path info %q", path, s.Name, s.PathInfo)
		}
		if !strings.HasSuffix(s.Name, ".php") || strings.Contains(s.Name, "/.") || strings.Contains(s.Name, "//") || strings.HasPrefix(s.Name, "/up/") {
			t.Fatalf("%q: script name %q", path, s.Name)
		}
		if i := strings.Index(s.Name, ".php/"); i >= 0 {
			t.Fatalf("%q: not split at the first .php segment: %q", path, s.Name)
		}
		rel, err := filepath.Rel(root, s.Filename)
		if err != nil || !filepath.IsLocal(rel) {
			t.Fatalf("%q: file %q not under the root", path, s.Filename)
		}
		real, err := filepath.EvalSymlinks(s.Filename)
		if err != nil {
			t.Fatalf("%q: %v", path, err)
		}
		if rel, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(rel) {
			t.Fatalf("%q: file %q leads to %q, out of the root", path, s.Filename, real)
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%q: %q is not a regular file", path, real)
		}
	})
}

// TestNoExecResolved: no_exec holds for where the script is, not only
// for how the URL spells it: a symbolic link or another case to the
// uploads directory, and a script that is a link into it; prefixes are
// cleaned at New. An in-root x.php linking to a .jpg runs nothing.
func TestNoExecResolved(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"uploads/evil.php", "uploads/a.jpg", "ok/run.php"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("<?php"), 0o644)
	}
	os.Symlink("uploads", filepath.Join(root, "u"))
	os.Symlink("uploads/evil.php", filepath.Join(root, "e.php"))
	os.Symlink("uploads/a.jpg", filepath.Join(root, "x.php"))
	os.Symlink("run.php", filepath.Join(root, "ok/link.php"))
	for _, prefix := range []string{"/uploads/", "/uploads", "/uploads//", "/uploads/./"} {
		cl, err := New(Options{Options: upstream.Options{Upstreams: []string{"unix:/nonexistent"}, MaxConns: 1},
			Root: root, NoExec: []string{prefix}})
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]error{
			"/uploads/evil.php": ErrForbidden,
			"/u/evil.php":       ErrForbidden, // a link to the directory
			"/e.php":            ErrForbidden, // a link to the script
			"/UPLOADS/evil.php": ErrForbidden, // another case
			"/Uploads/x.php":    ErrForbidden,
			"/x.php":            ErrForbidden, // a link to a.jpg
			"/ok/run.php":       nil,
			"/ok/link.php":      nil, // a link to a script outside no_exec
		} {
			_, _, err := cl.resolve(path)
			if want == nil && err != nil || want != nil && !errors.Is(err, want) {
				t.Errorf("no_exec %q: %s: got %v, want %v", prefix, path, err, want)
			}
		}
		cl.Close()
	}
	for _, bad := range []string{"uploads/", "/a/../uploads/", "/up loads/", `/up\loads`} {
		if _, err := New(Options{Options: upstream.Options{Upstreams: []string{"unix:/nonexistent"}, MaxConns: 1},
			Root: root, NoExec: []string{bad}}); err == nil || !strings.Contains(err.Error(), "no_exec") {
			t.Errorf("no_exec %q: got %v, want an error naming no_exec", bad, err)
		}
	}
}
