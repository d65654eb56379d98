package main_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/quic-go/quic-go/http3"

	"github.com/sluice-server/sluice/sluicetest"
)

// h3Config is a config serving dir's files and a CGI program that
// prints its parent's pid (the worker's) on a TLS listener with http3:
// true, with workers (0 for none).
func h3Config(t *testing.T, dir string, workers int) string {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("file a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pid.cgi"), []byte("#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\necho $PPID\n"), 0o755)
	file := filepath.Join(dir, "h3.yaml")
	writeConfig(t, file, fmt.Sprintf(`listen:
  - {address: "127.0.0.1:0", tls: {cert: localhost.crt, key: localhost.key}, http3: true}
workers: %d
health: {interval: 100ms, timeout: 1s}
routes:
  - match: /pid
    pipeline:
      - cgi: ./pid.cgi
  - match: /
    pipeline:
      - files: .
`, workers))
	return file
}

// h3Client asks url over HTTP/3 from a UDP socket of its own, and
// returns the status and body.
func h3Client(t *testing.T, tlsConf *tls.Config, url string) (int, string) {
	t.Helper()
	tr := &http3.Transport{TLSClientConfig: tlsConf}
	defer tr.Close()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatalf("HTTP/3 GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.Proto != "HTTP/3.0" {
		t.Fatalf("HTTP/3 GET %s: %s, %v", url, resp.Proto, err)
	}
	return resp.StatusCode, string(b)
}

// sluice serve -c with http3: true serves HTTP/3 on the UDP port of the
// TLS listener, says so in its listening record, announces it with
// Alt-Svc over HTTP/1.1, and stops on SIGTERM; sluice check refuses
// http3 without tls, saying what to write.
func TestServeHTTP3(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
	file := h3Config(t, dir, 0)
	s := start(t, "serve", "-c", file)
	port := s.addr[strings.LastIndex(s.addr, ":")+1:]
	if !strings.Contains(s.stderr(), "http3=127.0.0.1:"+port) {
		t.Errorf("the listening record does not give the HTTP/3 address:\n%s", s.stderr())
	}
	if status, body := h3Client(t, ca.ClientConfig("localhost"), "https://"+s.addr+"/a.txt"); status != 200 || body != "file a\n" {
		t.Errorf("HTTP/3: %d %q", status, body)
	}
	c := sluicetest.DialTLS(t, s.addr, ca.ClientConfig("localhost"))
	resp, _ := c.RoundTrip(t, "GET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	if got, want := resp.Header.Get("Alt-Svc"), `h3=":`+port+`"; ma=86400`; got != want {
		t.Errorf("HTTP/1.1 answer with Alt-Svc %q, want %q", got, want)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}

	bad := filepath.Join(dir, "bad.yaml")
	writeConfig(t, bad, "listen: {address: \":8443\", http3: true}\nroutes:\n  - match: /\n    pipeline:\n      - text: x\n")
	if r := sluice(t, "check", "-c", bad); r.code != 1 || !strings.Contains(r.stderr, "bad.yaml:1:28: http3: HTTP/3 runs over QUIC, which is always encrypted: add tls") {
		t.Errorf("sluice check of http3 without tls: %d\n%s", r.code, r.stderr)
	}
}

// With workers, each worker binds its own UDP socket on the port
// (SO_REUSEPORT): HTTP/3 clients from many addresses are spread among
// them by the kernel, and served; after a reload, by the new workers.
func TestWorkersHTTP3(t *testing.T) {
	needWorkers(t)
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
	file := h3Config(t, dir, 2)
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	served := func() map[string]bool {
		pids := map[string]bool{}
		for range 20 { // 20 client addresses: all on one worker once in 2^19
			status, body := h3Client(t, ca.ClientConfig("localhost"), "https://"+s.addr+"/pid")
			if status != 200 {
				t.Fatalf("HTTP/3: %d %q", status, body)
			}
			pids[strings.TrimSpace(body)] = true
		}
		return pids
	}
	if pids := served(); len(pids) != 2 {
		t.Errorf("HTTP/3 clients were served by %d workers, want 2: %v", len(pids), pids)
	}
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 1)
	if status, body := h3Client(t, ca.ClientConfig("localhost"), "https://"+s.addr+"/a.txt"); status != 200 || body != "file a\n" {
		t.Errorf("HTTP/3 after the reload: %d %q", status, body)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// An independent HTTP/3 implementation, ngtcp2's client (with nghttp3
// and GnuTLS), fetches a file, also with the client changing its local
// address part way (connection migration).
func TestHTTP3Ngtcp2(t *testing.T) {
	client := sluicetest.NeedTool(t, "gtlsclient", "ngtcp2-client")
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("0123456789", 100000)), 0o644)
	s := start(t, "serve", "-c", h3Config(t, dir, 0))
	host, port, _ := net.SplitHostPort(s.addr)
	for _, extra := range [][]string{nil, {"--change-local-addr=1ms"}} {
		down := t.TempDir()
		args := append([]string{"--quiet", "--exit-on-all-streams-close", "--timeout=10s", "--sni=localhost", "--download=" + down}, extra...)
		args = append(args, host, port, "https://localhost:"+port+"/a.txt", "https://localhost:"+port+"/big.txt")
		out, err := exec.Command(client, args...).CombinedOutput()
		if err != nil {
			t.Errorf("gtlsclient %q: %v\n%s", extra, err, out)
			continue
		}
		for name, want := range map[string]int{"a.txt": 7, "big.txt": 1000000} {
			if fi, err := os.Stat(filepath.Join(down, name)); err != nil || fi.Size() != int64(want) {
				t.Errorf("gtlsclient %q: %s: %v, want %d bytes\n%s", extra, name, err, want, out)
			}
		}
	}
}
