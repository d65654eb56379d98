package daemon

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A probe served by ServeProbes is answered by the engine with 204 but
// reaches no route and no access log; the same request on the config's
// listener is logged.
func TestServeProbes(t *testing.T) {
	dir := t.TempDir()
	file, access := filepath.Join(dir, "site.yaml"), filepath.Join(dir, "access.log")
	writeFile(t, file, "listen: 127.0.0.1:0\naccess_log: {file: "+access+", format: common}\nroutes:\n  - match: /\n    pipeline: [count, {text: hi}]\n")
	s, _ := newServer(t, fileLoad(file))
	start(t, s)
	probes, err := net.Listen("unix", filepath.Join(dir, "probe.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ServeProbes(probes); err != nil {
		t.Fatal(err)
	}
	ask := func(addr net.Addr) string {
		resp, _ := dial(t, addr).RoundTrip(t, "OPTIONS * HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
		return resp.Proto + " " + resp.Status
	}
	if got := ask(probes.Addr()); got != "HTTP/1.1 204 No Content" {
		t.Errorf("probe answered %q", got)
	}
	if got := ask(onlyAddr(t, s)); got != "HTTP/1.1 204 No Content" {
		t.Errorf("OPTIONS * answered %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Shutdown(ctx) // closes the access log, writing what is queued
	data, err := os.ReadFile(access)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 1 || !strings.HasPrefix(string(data), "127.0.0.1 ") {
		t.Errorf("access log %q: want the listener's request alone", data)
	}
}
