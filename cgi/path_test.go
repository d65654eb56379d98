//go:build unix

package cgi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// cgiShowScript prints PATH_INFO and PATH_TRANSLATED.
const cgiShowScript = "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s|%s' \"${PATH_INFO-unset}\" \"${PATH_TRANSLATED-unset}\"\n"

// cgiCall serves one GET of path (as the request's Path, whatever the
// engine would make of it) with comp, without a socket.
func cgiCall(comp pipe.Component, p string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	w, finish := engine.NewResponseWriter(rec)
	pipe.Handler(comp).Serve(w, &engine.Request{
		Method: []byte("GET"), Target: []byte(p), RawPath: []byte(p), Path: []byte(p),
		Host: []byte("x"), ProtoMinor: 1, Body: http.NoBody,
	})
	finish()
	return rec
}

// A PATH_INFO with a dot segment, an empty segment or a control byte is
// refused with 400 whatever the engine hands over, so PATH_TRANSLATED
// never leaves the document root (/cgi-bin/show.cgi/../../../etc/passwd
// gave PATH_TRANSLATED=/etc/passwd). Both modes, called directly with
// paths the engine's canonical form never has.
func TestPathNotCanonical(t *testing.T) {
	dir, docRoot := t.TempDir(), t.TempDir()
	script := cgiScript(t, dir, "show.cgi", cgiShowScript)
	gDir, _ := newGateway(t, Options{Dir: dir, Prefix: "/cgi-bin/", DocRoot: docRoot})
	gScript, _ := newGateway(t, Options{Script: script, Prefix: "/cgi-bin/show.cgi", DocRoot: docRoot})
	for name, g := range map[string]pipe.Component{"dir": gDir, "script": gScript} {
		for _, tt := range []struct {
			path   string
			status int
			body   string
		}{
			{"/cgi-bin/show.cgi/../../../etc/passwd", 400, ""},
			{"/cgi-bin/show.cgi/a/../../../../etc/passwd", 400, ""},
			{"/cgi-bin/show.cgi/..", 400, ""},
			{"/cgi-bin/show.cgi/./x", 400, ""},
			{"/cgi-bin/show.cgi/x/.", 400, ""},
			{"/cgi-bin/show.cgi//etc/passwd", 400, ""},
			{"/cgi-bin//show.cgi/x", 400, ""},
			{"/cgi-bin/show.cgi/a\x00b", 400, ""},
			{"/cgi-bin/show.cgi/a\nb", 400, ""},
			{"/cgi-bin/show.cgi/x/", 200, "/x/|" + docRoot + "/x"},
			{"/cgi-bin/show.cgi/..x/y..", 200, "/..x/y..|" + docRoot + "/..x/y.."},
		} {
			t.Run(fmt.Sprintf("%s/%q", name, tt.path), func(t *testing.T) {
				rec := cgiCall(g, tt.path)
				if rec.Code != tt.status {
					t.Fatalf("status %d (%q), want %d", rec.Code, rec.Body, tt.status)
				}
				if tt.status == 200 && rec.Body.String() != tt.body {
					t.Errorf("body %q, want %q", rec.Body, tt.body)
				}
			})
		}
	}
}

// The same over a real socket with the spellings an attacker sends: the
// script never sees a PATH_INFO with a dot segment nor a PATH_TRANSLATED
// outside the document root; paths that climb above the root are 400.
func TestPathTraversal(t *testing.T) {
	dir, docRoot := t.TempDir(), t.TempDir()
	cgiScript(t, dir, "show.cgi", cgiShowScript)
	g, _ := newGateway(t, Options{Dir: dir, Prefix: "/cgi-bin/", DocRoot: docRoot})
	rt, _ := pipe.NewRouter(pipe.Route{Match: []string{"/cgi-bin/"}, Pipeline: g})
	addr := sluicetest.NewServer(t, pipe.Handler(rt)).Addr
	for _, tt := range []struct {
		target string
		above  bool // climbs above the root: 400 whatever the engine does
	}{
		{"/cgi-bin/show.cgi/../../../etc/passwd", true},
		{"/cgi-bin/show.cgi/%2e%2e/%2e%2e/%2e%2e/etc/passwd", true},
		{"/cgi-bin/show.cgi/%2E%2E/%2e%2E/.%2e/etc/passwd", true},
		{"/cgi-bin/show.cgi/..%2f..%2f..%2fetc%2fpasswd", false},
		{"/cgi-bin/show.cgi/x/../../show.cgi/y", false},
		{"/cgi-bin/show.cgi/./x//y", false},
		{"/cgi-bin/show.cgi/%2e/x", false},
	} {
		t.Run(tt.target, func(t *testing.T) {
			resp, body := sluicetest.RoundTrip(t, addr, "GET "+tt.target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if tt.above && resp.StatusCode != 400 {
				t.Fatalf("status %d (%q), want 400", resp.StatusCode, body)
			}
			if resp.StatusCode != 200 {
				return // refused, or no such script
			}
			info, translated, _ := strings.Cut(body, "|")
			for _, seg := range strings.Split(info, "/") {
				if seg == "." || seg == ".." {
					t.Errorf("PATH_INFO %q has a dot segment", info)
				}
			}
			if translated != docRoot && !strings.HasPrefix(translated, docRoot+"/") {
				t.Errorf("PATH_TRANSLATED %q is outside %s", translated, docRoot)
			}
		})
	}
}

// cleanPath agrees with path.Clean on rooted paths (clean, or clean
// plus a trailing slash, and no control byte), and a clean path's
// PATH_TRANSLATED stays inside the root.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/a/b/", "/a/../b", "/a/./b", "//a", "/a//b", "/..", "/.", "/a/..",
		"/..a/b..", "/a\x00", "/a\nb", "", "*", "a/b", "/cgi-bin/show.cgi/../../../etc/passwd"} {
		f.Add(s)
	}
	root := filepath.Join(string(filepath.Separator), "srv", "www")
	f.Fuzz(func(t *testing.T, p string) {
		ok := cleanPath(p)
		if strings.HasPrefix(p, "/") {
			ctl := strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f })
			c := path.Clean(p)
			want := !ctl && (c == p || c != "/" && c+"/" == p)
			if ok != want {
				t.Fatalf("cleanPath(%q) = %v, want %v", p, ok, want)
			}
		}
		if !ok {
			return
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("cleanPath(%q) = true with a dot segment", p)
			}
		}
		tr, inside := translate(root, p)
		if !inside || (tr != root && !strings.HasPrefix(tr, root+string(filepath.Separator))) {
			t.Fatalf("translate(%q) = %q, %v: outside %s", p, tr, inside, root)
		}
	})
}
