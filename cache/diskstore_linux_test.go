package cache

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/proxy"
)

// Two processes with one directory share what is stored: this test
// binary, run again as a child, serves a cache on the parent's
// directory before a proxy to the parent's origin. What either stores
// the other hits, and an invalidation through the child is a miss in
// the parent.
func TestDiskTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	var o *origin
	h := diskHarness(t, Options{Path: dir}, nil)
	o = h.o
	o.set(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			w.WriteHeader(204)
			return
		}
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "body of "+r.URL.Path)
	})
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SLUICE_DISK_CHILD_DIR="+dir, "SLUICE_DISK_CHILD_ORIGIN="+o.srv.URL)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	var url string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "CHILD-URL "); ok {
			url = u
			break
		}
	}
	if url == "" {
		t.Fatal("the child process printed no address")
	}
	go io.Copy(io.Discard, stdout)
	child := &harness{url: url}

	if _, body := h.get(t, "/p"); body != "body of /p" {
		t.Fatalf("parent: %q", body)
	}
	resp, body := child.get(t, "/p", h.host())
	if body != "body of /p" || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Fatalf("child, stored by the parent: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	if _, body := child.get(t, "/q", h.host()); body != "body of /q" {
		t.Fatalf("child: %q", body)
	}
	resp, body = h.get(t, "/q")
	if body != "body of /q" || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Fatalf("parent, stored by the child: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	if n := o.n.Load(); n != 2 {
		t.Fatalf("origin got %d requests, want 2", n)
	}
	if resp, _ := child.do(t, "POST", "/p", h.host()); resp.StatusCode != 204 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	resp, _ = h.get(t, "/p")
	if cs := resp.Header.Get("Cache-Status"); !strings.Contains(cs, "uri-miss") {
		t.Fatalf("parent after the child's invalidation: %q", cs)
	}
}

// TestDiskChildProcess is TestDiskTwoProcesses's child: it serves until
// its stdin closes. Run alone it does nothing.
func TestDiskChildProcess(t *testing.T) {
	dir, originURL := os.Getenv("SLUICE_DISK_CHILD_DIR"), os.Getenv("SLUICE_DISK_CHILD_ORIGIN")
	if dir == "" {
		t.Skip("the child of TestDiskTwoProcesses")
	}
	p, err := proxy.New(proxy.Options{Upstreams: []string{originURL}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var h *harness
	t.Cleanup(func() {
		if h != nil {
			h.x.Close()
		}
	})
	h = newHarnessWith(t, Options{Path: dir}, nil, p)
	os.Stdout.WriteString("CHILD-URL " + h.url + "\n")
	io.Copy(io.Discard, os.Stdin)
}
