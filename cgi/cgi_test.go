//go:build unix

package cgi

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// cgiScript writes an executable script into dir.
func cgiScript(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// newGateway builds a CGI whose log goes to the returned buffer.
func newGateway(t *testing.T, opts Options) (pipe.Component, *sluicetest.Buffer) {
	t.Helper()
	lb := &sluicetest.Buffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(lb, nil))
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g, lb
}

// cgiRaw is sluicetest.RoundTrip returning the client's local port
// too, for a test of REMOTE_PORT.
func cgiRaw(t *testing.T, addr, raw string) (*http.Response, string, int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(sluicetest.RawTimeout))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, body := sluicetest.ReadResponse(t, bufio.NewReader(conn), "GET")
	return resp, body, conn.LocalAddr().(*net.TCPAddr).Port
}

// cgiEnvMap parses `env` output.
func cgiEnvMap(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// skipUnlessLinux skips a test of what the package does on Linux only:
// killing a program's process group, and learning that a client went
// (engine.GoneNotifier).
func skipUnlessLinux(t *testing.T, what string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip(what + ": Linux only")
	}
}

// cgiDead reports whether pid has exited: it no longer exists, or is a
// zombie waiting for a parent that is not us (a killed grandchild whose
// reaper, PID 1 here, may not reap).
func cgiDead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// cgiGone reports whether pid no longer exists at all (reaped).
func cgiGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// cgiPoll polls cond every 20ms for up to 20s.
func cgiPoll(cond func() bool) bool {
	for i := 0; i < 1000; i++ {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// cgiReadPids waits for a file of space-separated pids.
func cgiReadPids(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	ok := cgiPoll(func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		f := strings.Fields(string(b))
		if len(f) < n {
			return false
		}
		pids = pids[:0]
		for _, s := range f[:n] {
			p, err := strconv.Atoi(s)
			if err != nil {
				return false
			}
			pids = append(pids, p)
		}
		return true
	})
	if !ok {
		t.Fatalf("no pids in %s", path)
	}
	return pids
}

// The RFC 3875 meta-variables, from a real request on a real socket.
func TestEnv(t *testing.T) {
	dir := t.TempDir()
	script := cgiScript(t, dir, "env.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nexec env\n")
	docRoot := t.TempDir()
	g, _ := newGateway(t, Options{Script: script, Prefix: "/app/", DocRoot: docRoot,
		Env: map[string]string{"SITE_MODE": "test"}})
	addr := sluicetest.NewServer(t, pipe.Handler(g)).Addr
	host, port, _ := net.SplitHostPort(addr)

	resp, body, clientPort := cgiRaw(t, addr, "GET /app/extra/p%20q?x=1&y=%20 HTTP/1.1\r\n"+
		"Host: "+addr+"\r\n"+
		"X-Custom: a\r\nX-Custom: b\r\n"+
		"Cookie: a=1\r\nCookie: b=2\r\n"+
		"Proxy: http://evil.example/\r\n"+
		"X_Forwarded_For: 6.6.6.6\r\n"+
		"Authorization: Basic dTpw\r\n"+
		"User-Agent: cgi-test\r\n"+
		"Connection: close\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	env := cgiEnvMap(body)
	want := map[string]string{
		"GATEWAY_INTERFACE": "CGI/1.1",
		"SERVER_PROTOCOL":   "HTTP/1.1",
		"SERVER_SOFTWARE":   "sluice",
		"REQUEST_METHOD":    "GET",
		"REQUEST_URI":       "/app/extra/p%20q?x=1&y=%20",
		"QUERY_STRING":      "x=1&y=%20",
		"SCRIPT_NAME":       "/app",
		"SCRIPT_FILENAME":   script,
		"PATH_INFO":         "/extra/p q",
		"PATH_TRANSLATED":   filepath.Join(docRoot, "extra", "p q"),
		"DOCUMENT_ROOT":     docRoot,
		"SERVER_NAME":       host,
		"SERVER_PORT":       port,
		"REMOTE_ADDR":       "127.0.0.1",
		"REMOTE_HOST":       "127.0.0.1",
		"REMOTE_PORT":       strconv.Itoa(clientPort),
		"HTTP_HOST":         addr,
		"HTTP_X_CUSTOM":     "a, b",
		"HTTP_COOKIE":       "a=1; b=2",
		"HTTP_USER_AGENT":   "cgi-test",
		"SITE_MODE":         "test",
		"PWD":               dir, // the script's directory is its working directory
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	// AUTH_TYPE only for a user an authentication component admitted
	// (RFC 3875 §4.1.1); this request merely carries credentials.
	for _, k := range []string{"HTTP_PROXY", "HTTP_AUTHORIZATION", "HTTP_X_FORWARDED_FOR", "CONTENT_LENGTH", "CONTENT_TYPE", "AUTH_TYPE", "REMOTE_USER"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s is set (%q); want unset", k, v)
		}
	}
	if env["PATH"] == "" {
		t.Error("PATH is not set")
	}
}

// HTTP/1.0 without Host, and a route without a prefix: the whole path is
// SCRIPT_NAME, SERVER_PORT defaults to 80.
func TestEnvHTTP10(t *testing.T) {
	script := cgiScript(t, t.TempDir(), "env.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nexec env\n")
	g, _ := newGateway(t, Options{Script: script})
	addr := sluicetest.NewServer(t, pipe.Handler(g)).Addr
	_, body := sluicetest.RoundTrip(t, addr, "GET /run/this HTTP/1.0\r\n\r\n")
	env := cgiEnvMap(body)
	for k, v := range map[string]string{"SERVER_PROTOCOL": "HTTP/1.0", "SCRIPT_NAME": "/run/this", "SERVER_PORT": "80", "QUERY_STRING": ""} {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := env["PATH_INFO"]; ok {
		t.Errorf("PATH_INFO set to %q, want unset", env["PATH_INFO"])
	}
	if env["SERVER_NAME"] == "" {
		t.Error("SERVER_NAME is empty")
	}
}

// The request body reaches the program's stdin and comes back intact,
// with Content-Length or chunked, small or larger than every buffer.
func TestPostEcho(t *testing.T) {
	dir := t.TempDir()
	shEcho := cgiScript(t, dir, "echo.cgi", "#!/bin/sh\n"+
		"printf 'Content-Type: application/octet-stream\\nX-Length: %s\\nX-Type: %s\\n\\n' \"$CONTENT_LENGTH\" \"$CONTENT_TYPE\"\n"+
		"exec cat\n")
	scripts := map[string]string{"sh": shEcho}
	if py := sluicetest.HaveTool(t, "python3", "python3"); py != "" {
		scripts["python"] = cgiScript(t, dir, "echo.py", "#!"+py+"\n"+
			"import os, sys\n"+
			"n = int(os.environ.get('CONTENT_LENGTH') or 0)\n"+
			"data = sys.stdin.buffer.read(n)\n"+
			"sys.stdout.buffer.write(b'Content-Type: application/octet-stream\\r\\n')\n"+
			"sys.stdout.buffer.write(b'X-Length: %d\\r\\nX-Type: %s\\r\\n\\r\\n' % (n, os.environ.get('CONTENT_TYPE', '').encode()))\n"+
			"sys.stdout.buffer.write(data)\n")
	}
	big := make([]byte, 3<<20+17)
	rand.Read(big)
	bodies := map[string][]byte{"empty": {}, "small": []byte("name=value&x=%3Cy%3E"), "3MiB": big}

	for lang, script := range scripts {
		g, _ := newGateway(t, Options{Script: script})
		base := "http://" + sluicetest.NewServer(t, pipe.Handler(g)).Addr
		for name, body := range bodies {
			for _, chunked := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/chunked=%v", lang, name, chunked), func(t *testing.T) {
					var r io.Reader = bytes.NewReader(body)
					if chunked {
						r = io.MultiReader(r) // unknown length: the client chunks
					}
					req, _ := http.NewRequest("POST", base+"/echo", r)
					req.Header.Set("Content-Type", "application/x-test")
					if !chunked {
						req.ContentLength = int64(len(body))
					}
					resp, got := sluicetest.Do(t, req)
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %.200s", resp.StatusCode, got)
					}
					if got != string(body) {
						t.Errorf("echoed %d bytes, want %d identical", len(got), len(body))
					}
					wantLen := strconv.Itoa(len(body))
					if len(body) == 0 {
						wantLen = map[string]string{"sh": "", "python": "0"}[lang]
					}
					if l := resp.Header.Get("X-Length"); l != wantLen {
						t.Errorf("CONTENT_LENGTH = %q, want %q", l, wantLen)
					}
					if ct := resp.Header.Get("X-Type"); ct != "application/x-test" {
						t.Errorf("CONTENT_TYPE = %q", ct)
					}
				})
			}
		}
	}
}

// A chunked body over MaxBody is refused before the program runs.
func TestChunkedBodyTooLarge(t *testing.T) {
	dir := t.TempDir()
	script := cgiScript(t, dir, "ran.cgi", "#!/bin/sh\ntouch ran\nprintf 'Content-Type: text/plain\\n\\nok'\n")
	g, _ := newGateway(t, Options{Script: script, MaxBody: 1000})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(g)).Addr
	req, _ := http.NewRequest("POST", base+"/", io.MultiReader(bytes.NewReader(make([]byte, 1001))))
	resp, body := sluicetest.Do(t, req)
	if resp.StatusCode != 413 {
		t.Errorf("status %d (%s), want 413", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the program ran")
	}
}

// The program's response header: Status, Location, passed and dropped
// fields, and the 502 answers for headers that are not valid.
func TestResponseHeader(t *testing.T) {
	tests := []struct {
		name   string
		output string // printf format written by the script
		status int
		header map[string]string
		body   string
	}{
		{"plain", `Content-Type: text/plain\n\nhello`, 200, map[string]string{"Content-Type": "text/plain"}, "hello"},
		{"crlf", `Content-Type: text/plain\r\nX-A: 1\r\n\r\nhello`, 200, map[string]string{"X-A": "1"}, "hello"},
		{"status", `Status: 404 Not Found\nContent-Type: text/plain\n\nnope`, 404, nil, "nope"},
		{"status only", `Status: 204\n\n`, 204, nil, ""},
		{"body after 204, dropped", `Status: 204\nContent-Type: text/plain\n\nbody`, 204, nil, ""},
		{"body after 304, dropped", `Status: 304\nContent-Type: text/plain\n\nbody`, 304, nil, ""},
		{"local redirect", `Location: /new/place\n\n`, 302, map[string]string{"Location": "/new/place"}, ""},
		{"client redirect", `Location: http://example.com/x\n\n`, 302, map[string]string{"Location": "http://example.com/x"}, ""},
		{"redirect with status", `Status: 301 Moved Permanently\nLocation: /moved\nContent-Type: text/html\n\n<a href=/moved>moved</a>`,
			301, map[string]string{"Location": "/moved"}, "<a href=/moved>moved</a>"},
		{"fields", `Content-Type: text/html\nX-Custom:   spaced  \nConnection: close\nTransfer-Encoding: chunked\nKeep-Alive: 5\n\nbody`,
			200, map[string]string{"X-Custom": "spaced", "Connection": "", "Keep-Alive": "", "Transfer-Encoding": ""}, "body"},
		{"content length", `Content-Type: text/plain\nContent-Length: 5\n\nhello`, 200, map[string]string{"Content-Length": "5"}, "hello"},
		{"content length twice", `Content-Type: text/plain\nContent-Length: 5\nContent-Length: 5\n\nhello`, 200, map[string]string{"Content-Length": "5"}, "hello"},
		{"conflicting content lengths", `Content-Type: text/plain\nContent-Length: 3\nContent-Length: 7\n\nhello`, 502, nil, ""},
		{"control bytes in a value", `Content-Type: text/plain\nX-B: b\001c\177d\te\n\nhi`, 200, map[string]string{"X-B": "b c d\te"}, "hi"},
		{"no output", ``, 502, nil, ""},
		{"not a header", `hello world\n`, 502, nil, ""},
		{"no blank line", `Content-Type: text/plain\n`, 502, nil, ""},
		{"no CGI field", `X-Only: 1\n\nbody`, 502, map[string]string{"X-Only": ""}, ""},
		{"bad status", `Status: abc\nContent-Type: text/plain\n\n`, 502, nil, ""},
		{"interim status, ignored", `Status: 103 Early Hints\nLink: </a.css>; rel=preload\nContent-Type: text/plain\n\nbody`,
			200, map[string]string{"Link": "</a.css>; rel=preload"}, "body"},
		{"space before colon", `Content-Type : text/plain\n\n`, 502, nil, ""},
		{"folded line", `Content-Type: text/plain\n folded\n\n`, 502, nil, ""},
	}
	dir := t.TempDir()
	rt := []pipe.Route{}
	for i, tt := range tests {
		script := cgiScript(t, dir, fmt.Sprintf("s%d.cgi", i), "#!/bin/sh\nprintf '"+tt.output+"'\n")
		g, _ := newGateway(t, Options{Script: script})
		rt = append(rt, pipe.Route{Match: []string{fmt.Sprintf("/%d", i)}, Pipeline: g})
	}
	router, err := pipe.NewRouter(rt...)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(router)).Addr
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := sluicetest.Get(t, fmt.Sprintf("%s/%d", base, i))
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tt.status, body)
			}
			for k, v := range tt.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tt.status == 502 {
				if !strings.HasPrefix(body, "502 Bad Gateway") {
					t.Errorf("body %q", body)
				}
			} else if body != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
		})
	}
}

// Repeated header fields (Set-Cookie) are kept apart.
func TestRepeatedFields(t *testing.T) {
	script := cgiScript(t, t.TempDir(), "c.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\nSet-Cookie: a=1\\nSet-Cookie: b=2\\n\\nok'\n")
	g, _ := newGateway(t, Options{Script: script})
	resp, _ := sluicetest.Get(t, "http://"+sluicetest.NewServer(t, pipe.Handler(g)).Addr+"/")
	if got := resp.Header.Values("Set-Cookie"); strings.Join(got, "|") != "a=1|b=2" {
		t.Errorf("Set-Cookie = %q", got)
	}
}

// A header over MaxHeader is a 502, and the program is not left running.
func TestHeaderTooLarge(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	script := cgiScript(t, dir, "big.cgi", "#!/bin/sh\necho $$ > "+pidfile+"\n"+
		"printf 'Content-Type: text/plain\\n'\nwhile :; do printf 'X-Pad: 0123456789012345678901234567890123456789\\n'; done\n")
	g, _ := newGateway(t, Options{Script: script, MaxHeader: 4096, Timeout: time.Hour})
	resp, body := sluicetest.Get(t, "http://"+sluicetest.NewServer(t, pipe.Handler(g)).Addr+"/")
	if resp.StatusCode != 502 {
		t.Errorf("status %d (%q), want 502", resp.StatusCode, body)
	}
	pid := cgiReadPids(t, pidfile, 1)[0]
	if !cgiPoll(func() bool { return cgiGone(pid) }) {
		t.Errorf("program %d still exists", pid)
	}
}

// A program that outlives its timeout is killed with its whole process
// group and reaped; before its header that is a 504.
func TestTimeoutKillsGroup(t *testing.T) {
	skipUnlessLinux(t, "killing a process group")
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pids")
	script := cgiScript(t, dir, "slow.cgi", "#!/bin/sh\n"+
		"sleep 1000 &\n"+
		"echo $$ $! > "+pidfile+".tmp && mv "+pidfile+".tmp "+pidfile+"\n"+
		"wait\n")
	g, lb := newGateway(t, Options{Script: script, Timeout: time.Second})
	resp, body := sluicetest.Get(t, "http://"+sluicetest.NewServer(t, pipe.Handler(g)).Addr+"/")
	if resp.StatusCode != 504 || body != "504 Gateway Timeout: CGI program timed out\n" {
		t.Fatalf("status %d (%q), want 504", resp.StatusCode, body)
	}
	pids := cgiReadPids(t, pidfile, 2)
	if !cgiGone(pids[0]) {
		t.Errorf("program %d was not reaped by the time the response came", pids[0])
	}
	if !cgiPoll(func() bool { return cgiDead(pids[1]) }) {
		t.Errorf("the program's child %d survived", pids[1])
	}
	if !strings.Contains(lb.String(), "timeout") {
		t.Errorf("log does not mention the timeout:\n%s", lb)
	}
}

// A timeout after the header cuts the response short: the client sees an
// incomplete body, not a clean end.
func TestTimeoutAfterHeader(t *testing.T) {
	dir := t.TempDir()
	script := cgiScript(t, dir, "half.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\npartial'\nexec sleep 1000\n")
	g, _ := newGateway(t, Options{Script: script, Timeout: time.Second})
	addr := sluicetest.NewServer(t, pipe.Handler(g)).Addr
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if string(b) != "partial" {
		t.Errorf("body %q, want the partial output", b)
	}
	if err == nil {
		// The content fails after commit: the body must not look complete.
		t.Error("a response cut short by the timeout read as complete")
	}
}

// A client that goes away while the program streams gets the program
// killed: the next write fails.
func TestClientGoneKillsChild(t *testing.T) {
	skipUnlessLinux(t, "learning that a client went")
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pids")
	script := cgiScript(t, dir, "stream.cgi", "#!/bin/sh\n"+
		"sleep 1000 &\n"+
		"echo $$ $! > "+pidfile+".tmp && mv "+pidfile+".tmp "+pidfile+"\n"+
		"printf 'Content-Type: text/plain\\n\\n'\n"+
		"while :; do echo tick; sleep 0.05; done\n")
	g, _ := newGateway(t, Options{Script: script, Timeout: time.Hour})
	addr := sluicetest.NewServer(t, pipe.Handler(g)).Addr

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "tick") {
			break
		}
	}
	conn.Close()

	pids := cgiReadPids(t, pidfile, 2)
	if !cgiPoll(func() bool { return cgiGone(pids[0]) }) {
		t.Errorf("program %d still runs after the client left", pids[0])
	}
	if !cgiPoll(func() bool { return cgiDead(pids[1]) }) {
		t.Errorf("the program's child %d still runs after the client left", pids[1])
	}
}

// The body streams: what the program writes reaches the client while it
// is still running.
func TestStreams(t *testing.T) {
	dir := t.TempDir()
	gofile := filepath.Join(dir, "go")
	script := cgiScript(t, dir, "wait.cgi", "#!/bin/sh\n"+
		"printf 'Content-Type: text/plain\\n\\nfirst\\n'\n"+
		"i=0; while [ ! -e "+gofile+" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n"+
		"echo second\n")
	g, _ := newGateway(t, Options{Script: script})
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Get("http://" + sluicetest.NewServer(t, pipe.Handler(g)).Addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "second\n" {
		t.Errorf("rest %q, %v", rest, err)
	}
}

// The program's stderr goes to the log, line by line.
func TestStderrLogged(t *testing.T) {
	script := cgiScript(t, t.TempDir(), "err.cgi", "#!/bin/sh\necho 'first problem' >&2\necho 'second problem' >&2\nprintf 'Content-Type: text/plain\\n\\nok'\nexit 3\n")
	g, lb := newGateway(t, Options{Script: script})
	resp, body := sluicetest.Get(t, "http://"+sluicetest.NewServer(t, pipe.Handler(g)).Addr+"/")
	if resp.StatusCode != 200 || body != "ok" {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
	log := lb.String()
	for _, want := range []string{`line="first problem"`, `line="second problem"`, "exit status 3"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
}

// A program's path is never interpreted by a shell: spaces, semicolons
// and $( ) in its name are just characters.
func TestNoShell(t *testing.T) {
	dir := t.TempDir()
	name := "my script; touch pwned $(touch pwned2) `touch pwned3`"
	script := cgiScript(t, dir, name, "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nran %s' \"$SCRIPT_NAME\"\n")

	g, _ := newGateway(t, Options{Script: script})
	_, body := sluicetest.Get(t, "http://"+sluicetest.NewServer(t, pipe.Handler(g)).Addr+"/x")
	if body != "ran /x" {
		t.Errorf("script mode: body %q", body)
	}

	gd, _ := newGateway(t, Options{Dir: dir})
	_, body = sluicetest.Get(t, "http://"+sluicetest.NewServer(t, pipe.Handler(gd)).Addr+"/"+strings.NewReplacer(" ", "%20", ";", "%3B", "$", "%24", "`", "%60").Replace(name))
	if body != "ran /"+name {
		t.Errorf("dir mode: body %q", body)
	}
	for _, f := range []string{"pwned", "pwned2", "pwned3"} {
		for _, d := range []string{dir, "."} {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				t.Errorf("%s exists in %s: the name went through a shell", f, d)
			}
		}
	}
}

// Dir mode: the path names a program, what follows is PATH_INFO.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755)
	show := "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s|%s|%s' \"$SCRIPT_NAME\" \"${PATH_INFO-unset}\" \"$QUERY_STRING\"\n"
	cgiScript(t, dir, "top.cgi", show)
	cgiScript(t, filepath.Join(dir, "sub"), "app.cgi", show)
	cgiScript(t, dir, ".hidden.cgi", show)
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, _ := newGateway(t, Options{Dir: dir, Prefix: "/cgi-bin/"})
	rt, _ := pipe.NewRouter(pipe.Route{Match: []string{"/cgi-bin/"}, Pipeline: g})
	addr := sluicetest.NewServer(t, pipe.Handler(rt)).Addr

	tests := []struct {
		path   string
		status int
		body   string
	}{
		{"/cgi-bin/top.cgi", 200, "/cgi-bin/top.cgi|unset|"},
		{"/cgi-bin/top.cgi?a=b", 200, "/cgi-bin/top.cgi|unset|a=b"},
		{"/cgi-bin/top.cgi/x/y", 200, "/cgi-bin/top.cgi|/x/y|"},
		{"/cgi-bin/top.cgi/x/", 200, "/cgi-bin/top.cgi|/x/|"},
		{"/cgi-bin/sub/app.cgi/info", 200, "/cgi-bin/sub/app.cgi|/info|"},
		{"/cgi-bin/missing.cgi", 404, ""},
		{"/cgi-bin/sub/", 404, ""},
		{"/cgi-bin/sub/deeper/x", 404, ""},
		{"/cgi-bin/", 404, ""},
		{"/cgi-bin/.hidden.cgi", 404, ""},
		{"/cgi-bin/data.txt", 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := sluicetest.RoundTrip(t, addr, "GET "+tt.path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tt.status)
			}
			if tt.status == 200 && body != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
		})
	}
}

// A program that ignores a large request body and writes a large response
// does not deadlock the server.
func TestIgnoresBody(t *testing.T) {
	script := cgiScript(t, t.TempDir(), "big.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nhead -c 2000000 /dev/zero\n")
	g, _ := newGateway(t, Options{Script: script})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(g)).Addr
	req, _ := http.NewRequest("POST", base+"/", bytes.NewReader(make([]byte, 1<<20)))
	resp, body := sluicetest.Do(t, req)
	if resp.StatusCode != 200 || len(body) != 2000000 {
		t.Errorf("status %d, %d bytes", resp.StatusCode, len(body))
	}
}

// Several requests at once, each with its own program.
func TestConcurrent(t *testing.T) {
	script := cgiScript(t, t.TempDir(), "q.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s' \"$QUERY_STRING\"\n")
	g, _ := newGateway(t, Options{Script: script})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(g)).Addr
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(fmt.Sprintf("%s/?n=%d", base, i))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != fmt.Sprintf("n=%d", i) {
				t.Errorf("request %d: %q", i, b)
			}
		}()
	}
	wg.Wait()
}

func TestOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	script := cgiScript(t, dir, "ok.cgi", "#!/bin/sh\n")
	plain := filepath.Join(dir, "plain.txt")
	os.WriteFile(plain, nil, 0o644)
	tests := []struct {
		opts Options
		want string
	}{
		{Options{}, "cgi: set script or dir"},
		{Options{Script: script, Dir: dir}, "not both"},
		{Options{Script: filepath.Join(dir, "missing")}, "no such file"},
		{Options{Script: plain}, "not executable"},
		{Options{Script: dir}, "not a regular file"},
		{Options{Dir: filepath.Join(dir, "missing")}, "no such file"},
		{Options{Script: script, Prefix: "app"}, "must start with /"},
		{Options{Script: script, Env: map[string]string{"A=B": "x"}}, "invalid variable"},
	}
	for _, tt := range tests {
		_, err := New(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.opts, err, tt.want)
		}
	}
}

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "cgi-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.cgi"), []byte(`#!/bin/sh
printf 'Content-Type: text/plain\n'
printf 'X-Script: %s\n\n' "$SCRIPT_NAME"
echo "Hello from $REQUEST_METHOD, query $QUERY_STRING"
`), 0o755)

	// The programs in dir answer under /cgi-bin/.
	cgi, err := New(Options{Dir: dir, Prefix: "/cgi-bin/", Timeout: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(cgi))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

	resp, err := http.Get(url + "/cgi-bin/hello.cgi?name=world")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, resp.Header.Get("X-Script"))
	fmt.Print(string(body))
	// Output:
	// 200 OK /cgi-bin/hello.cgi
	// Hello from GET, query name=world
}

// Dir mode: a program without its execute bit is still 403, and the log
// says why, at warn, with the request's part of the name escaped and the
// request's ID.
func TestDirNotExecutableLogged(t *testing.T) {
	dir := t.TempDir()
	name := "say \"hi\" é.cgi"
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, lb := newGateway(t, Options{Dir: dir, Prefix: "/cgi-bin"})
	id := pipe.Pipe(func(c *pipe.Conn) bool {
		c.SetRequestID([]byte("r-1"))
		return true
	})
	addr := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{id, g})).Addr
	resp, _ := sluicetest.RoundTrip(t, addr, "GET /cgi-bin/say%20%22hi%22%20%C3%A9.cgi/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 403 {
		t.Fatalf("status %d, want 403", resp.StatusCode)
	}
	log := strings.TrimSuffix(lb.String(), "\n")
	want := `level=WARN msg="cgi: program is not executable (make it so: chmod +x FILE)" script="/cgi-bin/say \"hi\" é.cgi" file=` +
		strconv.Quote(filepath.Join(dir, name)) + " status=403 request_id=r-1"
	if !strings.HasSuffix(log, want) || strings.Contains(log, "\n") {
		t.Errorf("log:\n%s\nwant a line ending\n%s", log, want)
	}
}
