package main_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// getHost sends a GET for path to addr with the Host field host.
func getHost(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, body := sluicetest.Do(t, req)
	return resp.StatusCode, body
}

// The real binary serves two sites from included files, each with its
// own routes, and the top-level routes for every other host; a reload
// reads the included files again, a new file of the pattern included; an
// error in an included file is reported at its own line by check and
// rejects the reload; fmt formats the file it is given alone.
func TestServeSitesAndInclude(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	main := "listen: 127.0.0.1:0\ninclude: sites/*.yaml\nroutes:\n  - match: /\n    pipeline:\n      - text: \"default\\n\"\n"
	writeConfig(t, file, main)
	if err := os.MkdirAll(filepath.Join(dir, "sites", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "snippets"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, filepath.Join(dir, "sites", "a", "index.html"), "site a\n")
	aYAML := "sites:     # formatted, this would lose spaces\n  - hosts: [a.example, www.a.example]\n    routes:\n      - include: ../snippets/health.yaml\n      - match: /\n        pipeline:\n          - files: ./a\n"
	writeConfig(t, filepath.Join(dir, "sites", "a.yaml"), aYAML)
	writeConfig(t, filepath.Join(dir, "snippets", "health.yaml"), "routes:\n  - match: /healthz\n    pipeline:\n      - text: \"ok\\n\"\n")
	writeConfig(t, filepath.Join(dir, "sites", "b.yaml"), "sites:\n  - hosts: \"*.b.example\"\n    routes:\n      - match: /\n        pipeline:\n          - text: \"b one\\n\"\n")

	r := sluice(t, "check", "-c", file, "--explain")
	if r.code != 0 || !strings.Contains(r.stdout, "included       "+filepath.Join(dir, "sites", "a.yaml")+", "+filepath.Join(dir, "sites", "b.yaml")+", "+filepath.Join(dir, "snippets", "health.yaml")) ||
		!strings.Contains(r.stdout, "\nsite a.example, www.a.example\n") || !strings.Contains(r.stdout, ", from "+filepath.Join(dir, "snippets", "health.yaml")) {
		t.Fatalf("check --explain = %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	s := start(t, "serve", "-c", file)
	for _, tt := range []struct{ host, path, body string }{
		{"a.example", "/", "site a\n"},
		{"WWW.a.example", "/healthz", "ok\n"},
		{"x.b.example", "/anything", "b one\n"},
		{"c.example", "/", "default\n"},
		{"c.example", "/healthz", "default\n"}, // a site's routes serve its hosts alone
	} {
		if code, body := getHost(t, s.addr, tt.host, tt.path); code != 200 || body != tt.body {
			t.Errorf("%s%s = %d %q, want %q", tt.host, tt.path, code, body, tt.body)
		}
	}
	if code, _ := getHost(t, s.addr, "a.example", "/missing"); code != 404 {
		t.Errorf("a.example/missing = %d, want the site's 404", code)
	}

	// A reload reads the included files again, and the pattern's new file.
	writeConfig(t, filepath.Join(dir, "sites", "b.yaml"), "sites:\n  - hosts: \"*.b.example\"\n    routes:\n      - match: /\n        pipeline:\n          - text: \"b two\\n\"\n")
	writeConfig(t, filepath.Join(dir, "sites", "c.yaml"), "sites:\n  - hosts: c.example\n    routes:\n      - match: /\n        pipeline:\n          - text: \"site c\\n\"\n")
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 1)
	for _, tt := range []struct{ host, body string }{{"x.b.example", "b two\n"}, {"c.example", "site c\n"}, {"d.example", "default\n"}} {
		if code, body := getHost(t, s.addr, tt.host, "/"); code != 200 || body != tt.body {
			t.Errorf("after reload: %s = %d %q, want %q", tt.host, code, body, tt.body)
		}
	}

	// An error in an included file: check names that file's line, and a
	// reload is rejected with the same message, the sites kept.
	cFile := filepath.Join(dir, "sites", "c.yaml")
	writeConfig(t, cFile, "sites:\n  - hosts: c.example\n    routes:\n      - match: /\n        host: c.example\n        pipeline: [echo]\n")
	r = sluice(t, "check", "-c", file)
	if want := cFile + ":5:15: host: a route of a site serves the site's hosts"; r.code != 1 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("check of an included file's error = %d %q, want %q", r.code, r.stderr, want)
	}
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "reload rejected", 1)
	if !strings.Contains(s.stderr(), "c.yaml:5:15: host: a route of a site") {
		t.Errorf("the rejected reload's log does not name c.yaml:5:15:\n%s", s.stderr())
	}
	if code, body := getHost(t, s.addr, "c.example", "/"); code != 200 || body != "site c\n" {
		t.Errorf("after a rejected reload: c.example = %d %q", code, body)
	}

	// fmt formats the file it is given, not the files it includes.
	writeConfig(t, file, strings.Replace(main, "include: sites/*.yaml", "include:   sites/*.yaml    # every site", 1))
	r = sluice(t, "fmt", "-w", "-c", file)
	if b, _ := os.ReadFile(file); r.code != 0 || !strings.HasPrefix(string(b), "listen: 127.0.0.1:0\ninclude: sites/*.yaml # every site\nroutes:\n") {
		t.Errorf("fmt -w = %d %q: %q", r.code, r.stderr, b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sites", "a.yaml")); string(b) != aYAML {
		t.Errorf("fmt changed an included file: %q", b)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
}
