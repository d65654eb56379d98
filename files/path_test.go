package files

import (
	"cmp"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/sluice-server/sluice/engine"
)

func TestCheckPath(t *testing.T) {
	const ok, refused, dot = pathOK, pathRefused, pathDotfile
	tests := []struct {
		path    string
		clean   bool
		verdict int
	}{
		{"/", true, ok},
		{"/index.html", true, ok},
		{"/a/b/", true, ok},
		{"/a//b", false, ok},
		{"//", false, ok},
		{"/./a", false, ok},
		{"/a/.", false, ok},
		{"/a/./", false, ok},
		{"/.well-known/x", true, ok},
		{"/./.well-known/x", false, ok},
		{"//.well-known/x", false, ok},
		{"/a..b/c...", true, ok},
		{"/..", false, refused},
		{"/a/../b", false, refused},
		{"/a/..", false, refused},
		{"/.env/../x", false, refused},
		{"/.env", true, dot},
		{"/a/.git/config", true, dot},
		{"/.well-known/.x", true, dot},
		{"/a/.well-known/x", true, dot},
		{"/.well-knownx", true, dot},
		{"/a\\b", false, refused},
		{"/.env\\b", false, refused},
		{"/a\x00b", false, refused},
		{"", false, refused},
		{"*", false, refused},
		{"a/b", false, refused},
	}
	for _, tt := range tests {
		clean, verdict := checkPath([]byte(tt.path))
		if verdict != tt.verdict || verdict != refused && clean != tt.clean {
			t.Errorf("checkPath(%q) = %v, %v, want %v, %v", tt.path, clean, verdict, tt.clean, tt.verdict)
		}
		if verdict != refused && clean && cleanKey(tt.path) != tt.path {
			t.Errorf("checkPath(%q) says clean, but cleanKey gives %q", tt.path, cleanKey(tt.path))
		}
	}
}

func TestCleanKeyAndFSName(t *testing.T) {
	for in, want := range map[string][2]string{
		"/":        {"/", "."},
		"//":       {"/", "."},
		"/.":       {"/", "."},
		"/a//b/":   {"/a/b/", "a/b"},
		"/a/./b":   {"/a/b", "a/b"},
		"/a/.":     {"/a/", "a"}, // RFC 3986 §5.2.4: a final "." leaves the slash
		"/a.txt/.": {"/a.txt/", "a.txt"},
		"/a/./":    {"/a/", "a"},
		"/x.html/": {"/x.html/", "x.html"},
	} {
		key := cleanKey(in)
		if key != want[0] || fsName(key) != want[1] {
			t.Errorf("cleanKey(%q) = %q, fsName %q; want %q, %q", in, key, fsName(key), want[0], want[1])
		}
	}
}

func TestHasEncodedSlash(t *testing.T) {
	for raw, want := range map[string]bool{
		"/a%2fb": true, "/a%2Fb": true, "%2f": true, "/a%252f": false, "/a%2": false, "/a/b": false, "/%20": false,
	} {
		if got := hasEncodedSlash([]byte(raw)); got != want {
			t.Errorf("hasEncodedSlash(%q) = %v, want %v", raw, got, want)
		}
	}
}

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"/", "/a/../b", "/.well-known/x", "//a/./b/", "/a\\b", "/.env"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		clean, verdict := checkPath([]byte(p))
		if verdict == pathRefused {
			return
		}
		key := cleanKey(p)
		if clean && key != p {
			t.Fatalf("checkPath(%q) says clean; cleanKey = %q", p, key)
		}
		// What is served never climbs out, and keeps its dotfile verdict.
		if _, v := checkPath([]byte(key)); v != verdict {
			t.Fatalf("cleanKey(%q) = %q has verdict %d, want %d", p, key, v, verdict)
		}
		name := fsName(key)
		// Names that are not UTF-8 are refused by fs.FS (a 404).
		if utf8.ValidString(name) && !fs.ValidPath(name) {
			t.Fatalf("%q maps to the invalid fs.FS name %q", p, name)
		}
		for seg := range strings.SplitSeq(name, "/") {
			if seg == ".." || verdict == pathOK && strings.HasPrefix(seg, ".") && seg != "." && !strings.HasPrefix(name, ".well-known") {
				t.Fatalf("%q (verdict %d) maps to %q", p, verdict, name)
			}
		}
	})
}

func TestPathMap(t *testing.T) {
	m, err := NewPathMap("/static")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		raw, path string // raw "" means the same as path
		name      string
		ok        bool
	}{
		{"", "/static/a.css", "a.css", true},
		{"", "/static/secret/data.txt", "secret/data.txt", true},
		{"", "/static//secret/./data.txt", "secret/data.txt", true},
		{"", "/static/sub/", "sub", true},
		{"", "/static/", ".", true},
		{"", "/static", ".", true}, // redirected to /static/
		{"", "/static/.env", ".env", true},
		{"/static/%2e%2e/x", "/static/../x", "", false},
		{"", "/staticx/a.css", "", false},
		{"", "/a.css", "", false},
		{"", "/static/a\\b", "", false},
		{"", "/static/a\x00b", "", false},
		{"/static/a%2fb", "/static/a/b", "", false},
		{"", "*", "", false},
	}
	for _, tt := range tests {
		raw := cmp.Or(tt.raw, tt.path)
		name, ok := m.Map(&engine.Request{RawPath: []byte(raw), Path: []byte(tt.path)})
		if name != tt.name || ok != tt.ok {
			t.Errorf("Map(%q) = %q, %v; want %q, %v", raw, name, ok, tt.name, tt.ok)
		}
	}
	if name, ok := (PathMap{}).Map(&engine.Request{RawPath: []byte("/a//b/"), Path: []byte("/a//b/")}); name != "a/b" || !ok {
		t.Errorf("zero PathMap: %q, %v", name, ok)
	}
	for _, bad := range []string{"static", "/static/", "/"} {
		if _, err := NewPathMap(bad); err == nil {
			t.Errorf("NewPathMap(%q) succeeded", bad)
		}
	}
}

// FuzzPathMap checks that PathMap.Map and the Server agree: a path Map
// refuses is 404, and a path it maps to a name is served from the file
// of that name (or 404 with a trailing slash, as a file is no directory).
func FuzzPathMap(f *testing.F) {
	for _, s := range []string{"/static/a.css", "/static//a/./b", "/static", "/static/", "/static/%2e%2e/x",
		"/staticx", "/static/a%2fb", "/static/.env", "/static/.well-known/x", "/static/a/"} {
		f.Add(s)
	}
	m, _ := NewPathMap("/static")
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := url.PathUnescape(raw)
		if err != nil {
			return
		}
		r := &engine.Request{RawPath: []byte(raw), Path: []byte(p)}
		name, ok := m.Map(r)
		if ok && utf8.ValidString(name) && !fs.ValidPath(name) {
			t.Fatalf("Map(%q) = %q, not a valid fs.FS name", raw, name)
		}
		fsys := fstest.MapFS{}
		if ok && name != "." {
			fsys[name] = &fstest.MapFile{Data: []byte("x")}
		}
		s := NewFS(fsys, Options{StripPrefix: "/static", Dotfiles: DotfilesAllow, Precompressed: []string{}})
		e, err := s.lookup(r, false, 0)
		if err != nil {
			t.Fatalf("lookup(%q): %v", raw, err)
		}
		want := http.StatusNotFound
		switch {
		case ok && name == "." && p == "/static":
			want = http.StatusMovedPermanently
		case ok && name != "." && utf8.ValidString(name) && !strings.HasSuffix(p, "/") && !strings.HasSuffix(p, "/."):
			// A final "." segment leaves a slash (RFC 3986 §5.2.4).
			want = http.StatusOK
		}
		if e.status != want {
			t.Fatalf("Map(%q) = %q, %v; the Server answers %d, want %d", raw, name, ok, e.status, want)
		}
	})
}
