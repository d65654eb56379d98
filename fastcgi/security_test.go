//go:build unix

package fastcgi_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/fastcgi/fpmtest"
	"github.com/sluice-server/sluice/sluicetest"
)

// TestOnlyRealScriptsRun sends every spelling that has made servers run
// what is not a PHP file under the root (an upload named evil.jpg holding
// PHP, a script outside the root reached by a symbolic link, a script
// under an uploads directory marked no_exec…): none may run anything,
// which each script would show by creating the marker file.
func TestOnlyRealScriptsRun(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{NoExec: []string{"/uploads/"}})
	marker := filepath.Join(s.root, "ran")
	evil := `<?php touch('` + marker + `'); echo "ran";`
	outside, err := os.MkdirTemp("", "sluice-fcgi-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	write(t, filepath.Join(outside, "secret.php"), evil)
	write(t, filepath.Join(s.root, "uploads/evil.jpg"), evil)
	write(t, filepath.Join(s.root, "uploads/real.php"), evil)
	write(t, filepath.Join(s.root, "media/evil.jpg"), evil)
	write(t, filepath.Join(s.root, ".hidden.php"), evil)
	write(t, filepath.Join(s.root, ".git/x.php"), evil)
	write(t, filepath.Join(s.root, "X.PHP"), evil)
	write(t, filepath.Join(s.root, "evil.php.jpg"), evil)
	write(t, filepath.Join(s.root, "media/evil.jpg\n.php"), evil)
	if err := os.Symlink(filepath.Join(outside, "secret.php"), filepath.Join(s.root, "link.php")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.root, "linkdir")); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		target string
		status int
	}{
		{"/uploads/evil.jpg/x.php", 403},  // under no_exec
		{"/media/evil.jpg/x.php", 404},    // x.php absent: nothing runs
		{"/media/evil.jpg%0a.php", 403},   // a newline in the name
		{"/media/evil.jpg%0A.php", 403},   //
		{"/hello.php/%0a", 403},           // CVE-2019-11043: a newline in PATH_INFO
		{"/hello.php/a%0d%0ab", 403},      //
		{"/x.php%00.jpg", 400},            // the engine refuses a NUL
		{"/..%2fsecret.php", 400},         // and an encoded slash
		{"/uploads/..%2f..%2fx.php", 400}, //
		{"/%2e%2e/secret.php", 400},       // and a ".." above the root
		{"/link.php", 404},                // a symbolic link out of the root
		{"/linkdir/secret.php", 404},      // through a directory
		{"/uploads/real.php", 403},        // no_exec
		{"/uploads/real.php/x", 403},      //
		{"/.hidden.php", 403},             // dot files
		{"/.git/x.php", 403},              //
		{"/X.PHP", 404},                   // not .php: never split there
		{"/evil.php.jpg", 404},            //
		{"/media/evil.jpg", 404},          // no script at all
		{"/uploads/evil.jpg", 404},        //
		{"/uploads/evil.jpg/.php", 404},   //
	} {
		raw := "GET " + tc.target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
		resp, _ := s.srv.RoundTrip(t, raw)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: got %d, want %d", tc.target, resp.StatusCode, tc.status)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s ran a script", tc.target)
		}
	}
	// The test can fail: a real script does run.
	if resp, body := sluicetest.Get(t, s.srv.URL+"/ok.php"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("ok.php: %d %q", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(s.root, "ok-ran")); err != nil {
		t.Fatal("ok.php did not run")
	}
}

// TestResolve checks Resolve's mapping and its errors, without a server.
func TestResolve(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"index.php", "a/b.php", "a/index.php", "up/x.php", "c.php5", "dir.php/x.php"} {
		write(t, filepath.Join(root, name), "<?php")
	}
	if err := os.Symlink("a/b.php", filepath.Join(root, "inside.php")); err != nil {
		t.Fatal(err)
	}
	// os.Root follows no absolute link, even to a file inside the root.
	if err := os.Symlink(filepath.Join(root, "a/b.php"), filepath.Join(root, "absolute.php")); err != nil {
		t.Fatal(err)
	}
	cl, err := fastcgi.New(fastcgi.Options{Options: upstreamAddrs("unix:/nonexistent.sock"), Root: root,
		NoExec: []string{"/up"}, SplitPath: []string{".php", ".php5"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, tc := range []struct {
		path           string
		name, info     string
		file           string
		notFound, deny bool
	}{
		{path: "/", name: "/index.php", file: "index.php"},
		{path: "/a/", name: "/a/index.php", file: "a/index.php"},
		{path: "/a/b.php", name: "/a/b.php", file: "a/b.php"},
		{path: "/a/b.php/", name: "/a/b.php", info: "/", file: "a/b.php"},
		{path: "/a/b.php/x/y.php", name: "/a/b.php", info: "/x/y.php", file: "a/b.php"},
		{path: "/c.php5/z", name: "/c.php5", info: "/z", file: "c.php5"},
		{path: "/inside.php", name: "/inside.php", file: "inside.php"},
		{path: "/absolute.php", notFound: true},
		{path: "/a", notFound: true},
		{path: "/a/c.php", notFound: true},
		{path: "/dir.php/x.php", notFound: true}, // the first .php segment is a directory
		{path: "/.php", notFound: true},
		{path: "/up/x.php", deny: true},
		{path: "/up", notFound: true},
		{path: "/a/b.php/\x7f", deny: true},
		{path: "/a/../index.php", deny: true}, // never canonical: refused all the same
		{path: "relative.php", notFound: true},
	} {
		sc, err := cl.Resolve(tc.path)
		switch {
		case tc.notFound || tc.deny:
			want := fastcgi.ErrNotFound
			if tc.deny {
				want = fastcgi.ErrForbidden
			}
			if !errors.Is(err, want) {
				t.Errorf("%q: %+v, %v; want %v", tc.path, sc, err, want)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.path, err)
		case sc.Name != tc.name || sc.PathInfo != tc.info || sc.Filename != filepath.Join(root, tc.file):
			t.Errorf("%q: got %+v", tc.path, sc)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		opts fastcgi.Options
		want string
	}{
		{fastcgi.Options{Root: root}, "fastcgi: no upstreams"},
		{fastcgi.Options{Options: upstreamAddrs("http://x:9000"), Root: root}, "want unix:/path/to/socket, host:port or tcp://host:port"},
		{fastcgi.Options{Options: upstreamAddrs("unix:"), Root: root}, "want unix:/path/to/socket"},
		{fastcgi.Options{Options: upstreamAddrs("x:port"), Root: root}, "port"},
		{fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000")}, "fastcgi: root"},
		{fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000"), Root: root, Script: "none.php"}, "fastcgi: script"},
		{fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000"), Root: root, SplitPath: []string{"php"}}, "fastcgi: split_path"},
		{fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000"), Root: root, Index: "../x.php"}, "fastcgi: index"},
		{fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000"), Root: root, NoExec: []string{"up"}}, "fastcgi: no_exec"},
		{fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000"), Root: root, Env: map[string]string{"A": "x\ny"}}, "fastcgi: env"},
		{fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000"), Root: root, ReadTimeout: -1}, "fastcgi: read_timeout must not be negative"},
		{fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000"), Root: root, MaxBody: -1}, "fastcgi: max_body must not be negative"},
	} {
		cl, err := fastcgi.New(tc.opts)
		if err == nil {
			cl.Close()
			t.Errorf("%+v: no error", tc.opts)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "fastcgi: ") {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
	for _, addr := range []string{"unix:/run/php.sock", "127.0.0.1:9000", "tcp://localhost:9000", "[::1]:9000"} {
		cl, err := fastcgi.New(fastcgi.Options{Options: upstreamAddrs(addr), Root: root})
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		cl.Close()
	}
}

func TestScriptOption(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "public/index.php"), "<?php")
	for _, tc := range []struct {
		script string
		ok     bool
	}{
		{"public/index.php", true},
		{filepath.Join(root, "public/index.php"), true},
		{"./public/../public/index.php", true},
		{"../index.php", false},
		{"/etc/passwd", false},
		{"public", false},
	} {
		cl, err := fastcgi.New(fastcgi.Options{Options: upstreamAddrs("127.0.0.1:9000"), Root: root, Script: tc.script})
		if !tc.ok {
			if err == nil {
				cl.Close()
				t.Errorf("script %q: no error", tc.script)
			}
			continue
		}
		if err != nil {
			t.Errorf("script %q: %v", tc.script, err)
			continue
		}
		cl.Close()
	}
}
