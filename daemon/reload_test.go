package daemon

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reload applies the whole file: limits, server_header and new methods
// to the next request of a connection opened before it, the log section
// (records move to the new file, in the new format) and pid_file (moved);
// nothing is said to need a restart.
func TestReloadAppliesEverything(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	logA, logB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	pidA, pidB := filepath.Join(dir, "a.pid"), filepath.Join(dir, "b.pid")
	conf := func(header, maxTarget, logFile, format, pidFile, methods string) string {
		return fmt.Sprintf("listen: 127.0.0.1:0\nserver_header: %s\nlimits: {max_target: %s}\n"+
			"log: {output: %s, format: %s}\npid_file: %s\nroutes:\n"+
			"  - match: /\n    methods: [%s]\n    pipeline: [{text: hi}]\n", header, maxTarget, logFile, format, pidFile, methods)
	}
	writeFile(t, file, conf("a", "1KiB", logA, "text", pidA, "GET"))
	s, _ := newServer(t, fileLoad(file))
	start(t, s)
	c := dial(t, onlyAddr(t, s))
	long := "/" + strings.Repeat("x", 2000)
	ask := func(method, target string) *http.Response {
		t.Helper()
		resp, _ := c.RoundTrip(t, method+" "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
		return resp
	}
	if resp := ask("PROPFIND", "/"); resp.StatusCode != 501 || resp.Header.Get("Server") != "a" {
		t.Fatalf("before the reload: PROPFIND %d, Server %q", resp.StatusCode, resp.Header.Get("Server"))
	}

	writeFile(t, file, conf("b", "4KiB", logB, "json", pidB, "GET, PROPFIND"))
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if resp := ask("PROPFIND", "/"); resp.StatusCode != 200 || resp.Header.Get("Server") != "b" {
		t.Errorf("after the reload: PROPFIND %d, Server %q; want 200 and b", resp.StatusCode, resp.Header.Get("Server"))
	}
	if resp := ask("GET", long); resp.StatusCode != 200 {
		t.Errorf("after the reload: a 2001-byte target gets %d, want 200 under max_target 4KiB", resp.StatusCode)
	}
	if _, err := os.Stat(pidA); !os.IsNotExist(err) {
		t.Errorf("the old pid file is left: %v", err)
	}
	if _, err := os.Stat(pidB); err != nil {
		t.Errorf("the new pid file: %v", err)
	}
	a, _ := os.ReadFile(logA)
	b, _ := os.ReadFile(logB)
	if !bytes.Contains(a, []byte("msg=reloading")) || bytes.Contains(a, []byte("reloaded")) || bytes.Contains(a, []byte("restart")) {
		t.Errorf("the old log: %s\nwant the lines up to the reload, no restart warning", a)
	}
	if !bytes.Contains(b, []byte(`"msg":"reloaded"`)) || bytes.Contains(b, []byte("msg=")) {
		t.Errorf("the new log: %s\nwant the lines from the reload on, in JSON", b)
	}
}
