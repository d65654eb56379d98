package demo_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/demo"
	"github.com/sluice-server/sluice/htpasswd"
)

func TestFS(t *testing.T) {
	fsys := demo.FS()
	for _, name := range []string{demo.ConfigFile, "public/index.html", "public/favicon.svg", "public/favicon.ico",
		"public/graph.svg", "assets/style.css", "templates/_top.html", "static/opticks-book-one.html"} {
		b, err := fs.ReadFile(fsys, name)
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
	// The flat pages are about 80 KB, as the C10K article's.
	pages, _ := fs.Glob(fsys, "static/opticks-*.html")
	if len(pages) != 3 {
		t.Errorf("static pages %q, want 3", pages)
	}
	for _, p := range pages {
		if fi, err := fs.Stat(fsys, p); err != nil || fi.Size() < 75_000 || fi.Size() > 85_000 {
			t.Errorf("%s: %v bytes, want about 80 KB (%v)", p, fi.Size(), err)
		}
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	n, err := demo.Write(dir)
	if err != nil || n == 0 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	// Unchanged files are not written again, a changed one is, and a
	// file of the data directory is left alone.
	os.WriteFile(filepath.Join(dir, "assets", "style.css"), []byte("edited"), 0o644)
	os.WriteFile(filepath.Join(dir, "articles.db"), []byte("data"), 0o644)
	if n, err := demo.Write(dir); err != nil || n != 1 {
		t.Errorf("Write again = %d, %v; want 1 file rewritten", n, err)
	}
	want, _ := fs.ReadFile(demo.FS(), "assets/style.css")
	if got, _ := os.ReadFile(filepath.Join(dir, "assets", "style.css")); string(got) != string(want) {
		t.Errorf("style.css not rewritten: %.40q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "articles.db")); string(got) != "data" {
		t.Errorf("articles.db = %q, want it kept", got)
	}
	if n, err := demo.Write(dir); err != nil || n != 0 {
		t.Errorf("Write a third time = %d, %v; want 0", n, err)
	}
	// A file an older site had is removed; one Write never wrote is not.
	manifest, _ := os.ReadFile(filepath.Join(dir, demo.ManifestFile))
	os.WriteFile(filepath.Join(dir, "public", "old.html"), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(dir, demo.ManifestFile), append(manifest, "public/old.html\n../escape\n"...), 0o644)
	if _, err := demo.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "public", "old.html")); err == nil {
		t.Errorf("public/old.html, which the site no longer has, is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "articles.db")); err != nil {
		t.Errorf("articles.db: %v", err)
	}
}

func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	pw, err := demo.Credentials(dir)
	if err != nil || len(pw) < 12 {
		t.Fatalf("Credentials = %q, %v", pw, err)
	}
	check := func(pw string) bool {
		f, err := htpasswd.Open(filepath.Join(dir, demo.HtpasswdFile), htpasswd.Options{})
		if err != nil {
			t.Fatal(err)
		}
		users, err := f.Users()
		return err == nil && users.Check([]byte(demo.User), []byte(pw))
	}
	if !check(pw) || check(pw+"x") {
		t.Errorf("the htpasswd file does not check the password %q alone", pw)
	}
	if fi, err := os.Stat(filepath.Join(dir, demo.PasswordFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("password file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if again, err := demo.Credentials(dir); err != nil || again != pw {
		t.Errorf("Credentials again = %q, %v; want %q", again, err, pw)
	}
	// Without its hash, the password is made anew.
	os.Remove(filepath.Join(dir, demo.HtpasswdFile))
	if fresh, err := demo.Credentials(dir); err != nil || fresh == pw || !check(fresh) {
		t.Errorf("Credentials without htpasswd = %q, %v; want a new password", fresh, err)
	}
	// Another data directory, another password.
	if other, _ := demo.Credentials(t.TempDir()); other == pw {
		t.Errorf("two data directories share the password %q", pw)
	}
}

func ExampleFS() {
	f, _ := demo.FS().Open(demo.ConfigFile)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	fmt.Println(sc.Text())
	// Output: # The demo site of Sluice. `sluice demo` writes this folder into its data
}
