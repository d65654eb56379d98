package files

import "testing"

func TestCheckPath(t *testing.T) {
	tests := []struct {
		path      string
		clean, ok bool
	}{
		{"/", true, true},
		{"/index.html", true, true},
		{"/a/b/", true, true},
		{"/a//b", false, true},
		{"//", false, true},
		{"/./a", false, true},
		{"/a/.", false, true},
		{"/a/./", false, true},
		{"/.well-known/x", true, true},
		{"/./.well-known/x", false, true},
		{"//.well-known/x", false, true},
		{"/a..b/c...", true, true},
		{"/..", false, false},
		{"/a/../b", false, false},
		{"/a/..", false, false},
		{"/.env", false, false},
		{"/a/.git/config", false, false},
		{"/.well-known/.x", false, false},
		{"/a/.well-known/x", false, false},
		{"/.well-knownx", false, false},
		{"/a\\b", false, false},
		{"/a\x00b", false, false},
		{"", false, false},
		{"*", false, false},
		{"a/b", false, false},
	}
	for _, tt := range tests {
		clean, ok := checkPath([]byte(tt.path))
		if ok != tt.ok || ok && clean != tt.clean {
			t.Errorf("checkPath(%q) = %v, %v, want %v, %v", tt.path, clean, ok, tt.clean, tt.ok)
		}
		if ok && clean && cleanKey(tt.path) != tt.path {
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
		"/a/.":     {"/a", "a"},
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
		clean, ok := checkPath([]byte(p))
		if !ok {
			return
		}
		key := cleanKey(p)
		if clean && key != p {
			t.Fatalf("checkPath(%q) says clean; cleanKey = %q", p, key)
		}
		// What is served never climbs out or shows a dotfile.
		if _, ok := checkPath([]byte(key)); !ok {
			t.Fatalf("cleanKey(%q) = %q is refused by checkPath", p, key)
		}
		name := fsName(key)
		for i := 0; i+1 < len(name); i++ {
			if name[i] == '.' && (i == 0 || name[i-1] == '/') && name[i+1] == '.' {
				t.Fatalf("%q maps to %q", p, name)
			}
		}
	})
}
