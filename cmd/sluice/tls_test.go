package main_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// sluice serve --tls-cert --tls-key serves the folder over HTTPS: curl,
// trusting the test's CA, fetches a file, over HTTP/2 and, asked to,
// HTTP/1.1 (ALPN), as sluice help serve says; the flags go
// together, and not with -c.
func TestServeTLS(t *testing.T) {
	curl := sluicetest.NeedTool(t, "curl", "curl")
	dir, root := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("file a\n"), 0o644)
	ca := sluicetest.NewCA(t)
	cert, key := ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
	caFile := ca.WriteFiles(t, dir)
	s := start(t, "serve", "--root", root, "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key)
	if !strings.Contains(s.stderr(), "tls=true") {
		t.Errorf("the listening record does not say TLS:\n%s", s.stderr())
	}
	// sluice help serve says what the listener speaks.
	help := strings.Join(strings.Fields(sluice(t, "help", "serve").stdout), " ")
	if !strings.Contains(help, "HTTPS instead: HTTP/2, or HTTP/1.1 for a client that asks for it") {
		t.Errorf("sluice help serve does not say HTTPS is HTTP/2 or HTTP/1.1:\n%s", help)
	}
	for _, tc := range []struct{ flag, version string }{{"--http2", "2"}, {"--http1.1", "1.1"}} {
		out, err := exec.Command(curl, "-sS", tc.flag, "--cacert", caFile, "-w", "\n%{http_version} %{ssl_verify_result}",
			"https://"+s.addr+"/a.txt").CombinedOutput()
		if err != nil || string(out) != "file a\n\n"+tc.version+" 0" {
			t.Errorf("curl %s: %v\n%s", tc.flag, err, out)
		}
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}

	for _, args := range [][]string{
		{"serve", "--tls-cert", cert},
		{"serve", "--tls-key", key},
		{"serve", "-c", filepath.Join(dir, "x.yaml"), "--tls-cert", cert, "--tls-key", key},
	} {
		if r := sluice(t, args...); r.code != 2 || !strings.Contains(r.stderr, "tls-") {
			t.Errorf("sluice %q = %d, %q; want a usage error", args, r.code, r.stderr)
		}
	}
}

// With worker processes each worker reads the certificates; SIGHUP
// starts workers that read them again, so new connections get the
// renewed certificate.
func TestWorkersTLSReload(t *testing.T) {
	needWorkers(t)
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "a.example")
	file := filepath.Join(dir, "w.yaml")
	conf := func(addr, body string) string {
		return fmt.Sprintf("listen:\n  - {address: %q, tls: {cert: a.example.crt, key: a.example.key}}\n"+
			"workers: 2\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline:\n      - text: %q\n", addr, body)
	}
	writeConfig(t, file, conf("127.0.0.1:0", "v0"))
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	fetch := func() (string, string) {
		t.Helper()
		c := sluicetest.DialTLS(t, s.addr, ca.ClientConfig("a.example"))
		_, body := c.RoundTrip(t, "GET / HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n")
		return body, c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	body, serial := fetch()
	if body != "v0" {
		t.Fatalf("before the reload: %q", body)
	}
	ca.IssueFiles(t, dir, "a.example")
	writeConfig(t, file, conf(s.addr, "v1"))
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 1)
	s.waitLog(t, `msg="worker stopped"`, 2) // the old workers drained: they accept no more
	body2, serial2 := fetch()
	if body2 != "v1" || serial2 == serial {
		t.Errorf("after the reload: %q with serial %s (before: %s); want v1 and a new certificate", body2, serial2, serial)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// Private keys are read before the server switches to the config's
// user, as nginx does: a key only root may read serves. Without workers
// a reload then reads it as that user, fails, and the running config
// keeps serving; with workers the master starts new workers as root,
// which read it before switching.
func TestUserTLSKeys(t *testing.T) {
	nobody(t)
	for _, workers := range []int{0, 1} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			keyDir := t.TempDir() // 0700, root's
			ca := sluicetest.NewCA(t)
			cert, key := ca.IssueFiles(t, keyDir, "a.example")
			file := filepath.Join(sharedDir(t), "site.yaml")
			conf := func(addr string) string {
				return fmt.Sprintf("listen:\n  - {address: %q, tls: {cert: %s, key: %s}}\nworkers: %d\nuser: nobody\n"+
					"routes:\n  - match: /\n    pipeline: [{text: hi}]\n", addr, cert, key, workers)
			}
			writeConfig(t, file, conf("127.0.0.1:0"))
			s := start(t, "serve", "-c", file)
			if workers > 0 {
				s.waitLog(t, "workers ready", 1)
			}
			get := func() string {
				t.Helper()
				// Bounded, so that a server that never answers fails the
				// test rather than hanging it. Not sluicetest.DialTLS:
				// a failed handshake shows the server's log.
				c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", s.addr, ca.ClientConfig("a.example"))
				if err != nil {
					t.Fatalf("%v\n%s", err, s.stderr())
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n")
				_, body := sluicetest.ReadResponse(t, bufio.NewReader(c), "GET")
				return body
			}
			if got := get(); got != "hi" {
				t.Fatalf("before the reload: %q", got)
			}
			writeConfig(t, file, conf(s.addr))
			s.cmd.Process.Signal(syscall.SIGHUP)
			if workers == 0 {
				s.waitLog(t, "reload rejected", 1)
				if !strings.Contains(s.stderr(), "permission denied") {
					t.Errorf("the rejected reload does not say why:\n%s", s.stderr())
				}
			} else {
				s.waitLog(t, "msg=reloaded", 1)
			}
			if got := get(); got != "hi" {
				t.Errorf("after the reload: %q", got)
			}
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("exit status %d\n%s", code, s.stderr())
			}
		})
	}
}
