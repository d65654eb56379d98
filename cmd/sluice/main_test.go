package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/sluice-server/sluice/sluicetest"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the sluice command built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sluice")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building sluice:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// A race-enabled binary sleeps a second at exit to catch late race
	// reports; a tenth is plenty for these short runs and saves about a
	// minute over the suite.
	if raceEnabled && os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=100")
	}
	// The tests run as root on this project's machines, and write
	// configs without user: serving them as root on purpose is what
	// SLUICE_ALLOW_ROOT=1 says (root_test.go checks the refusal without it).
	os.Setenv("SLUICE_ALLOW_ROOT", "1")
	// What the servers keep (the QUIC secret, by default) goes under the
	// test's directory, not the user's cache directory.
	os.Setenv("STATE_DIRECTORY", filepath.Join(dir, "state"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is how a finished sluice process ended.
type result struct {
	code           int
	stdout, stderr string
}

// sluice runs the binary to completion with args.
func sluice(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("sluice %q: %v", args, err)
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// server is a running sluice process.
type server struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	log  strings.Builder // stderr
	done chan struct{}   // closed when stderr is drained
}

var listening = regexp.MustCompile(`msg=listening addr=(\S+)`)

// start runs sluice with args, which must listen on 127.0.0.1:0, and
// waits for it to log its address. The process is killed when the test
// ends, if still running.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	return startCmd(t, exec.Command(binary, args...))
}

// startCmd is start for a command to run.
func startCmd(t *testing.T, cmd *exec.Cmd) *server {
	t.Helper()
	args := cmd.Args[1:]
	s := &server{cmd: cmd, done: make(chan struct{})}
	// stderr is a pipe of ours rather than the command's StderrPipe, for
	// it to stay readable as long as any process writes to it: a binary
	// upgrade's new master outlives the process started.
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = w
	err = s.cmd.Start()
	w.Close()
	if err != nil {
		stderr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer close(s.done)
		defer stderr.Close()
		sc := bufio.NewScanner(stderr)
		first := true
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			// Only the first address is waited for: a process with
			// workers logs one line per worker, and more at every reload.
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && first {
				first = false
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			s.cmd.Wait()
			t.Fatalf("sluice %q exited before listening:\n%s", args, s.stderr())
		}
		s.addr = a
	case <-time.After(20 * time.Second):
		t.Fatalf("sluice %q did not log its address:\n%s", args, s.stderr())
	}
	return s
}

func (s *server) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// stop sends sig and returns the exit status.
func (s *server) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return s.wait(t)
}

// wait waits for the process to exit and returns its exit status.
func (s *server) wait(t *testing.T) int {
	t.Helper()
	<-s.done
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return s.cmd.ProcessState.ExitCode()
}

// get is sluicetest.Get returning the status and the header fields.
func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, body := sluicetest.Get(t, url)
	return resp.StatusCode, resp.Header, body
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<p>home</p>"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("file a\n"), 0o644)
	s := start(t, "serve", "--root", dir, "--listen", "127.0.0.1:0")
	if code, h, body := get(t, "http://"+s.addr+"/a.txt"); code != 200 || body != "file a\n" || h.Get("Server") != "sluice" {
		t.Errorf("GET /a.txt = %d %q Server %q", code, body, h.Get("Server"))
	}
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "<p>home</p>" {
		t.Errorf("GET / = %d %q", code, body)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status after SIGTERM = %d, want 0\n%s", code, s.stderr())
	}
}

func TestServeServerHeader(t *testing.T) {
	s := start(t, "serve", "--root", t.TempDir(), "--listen", "127.0.0.1:0", "--server-header", "edge/1")
	if _, h, _ := get(t, "http://"+s.addr+"/"); h.Get("Server") != "edge/1" {
		t.Errorf("Server = %q, want edge/1", h.Get("Server"))
	}
	s2 := start(t, "serve", "-root", t.TempDir(), "-listen=127.0.0.1:0", "-server-header=")
	if _, h, _ := get(t, "http://"+s2.addr+"/"); h.Values("Server") != nil {
		t.Errorf("Server = %q, want none", h.Values("Server"))
	}
}

// SIGTERM closes idle keep-alive connections and exits 0.
func TestGracefulShutdown(t *testing.T) {
	s := start(t, "demo", "--listen", "127.0.0.1:0", "--data", t.TempDir())
	c := sluicetest.Dial(t, s.addr)
	if resp, _ := c.RoundTrip(t, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("GET /hello: %s", resp.Status)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status = %d, want 0\n%s", code, s.stderr())
	}
	if _, err := c.R.ReadByte(); err != io.EOF {
		t.Errorf("idle connection after shutdown: read %v, want EOF", err)
	}
	for _, want := range []string{"shutting down", "stopped"} {
		if !strings.Contains(s.stderr(), want) {
			t.Errorf("log lacks %q:\n%s", want, s.stderr())
		}
	}
}

// A response still being sent when the grace period ends is cut, with a
// warning counting the connections cut, and the exit status is still 0
// (issue 14, finding 8: it was 1, so a systemd unit read as failed).
func TestShutdownGraceRunsOut(t *testing.T) {
	dir := t.TempDir()
	// A large sparse file: a client that stops reading keeps its
	// response in flight for the write timeout (30s).
	f, err := os.Create(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 30)
	f.Close()
	s := start(t, "serve", "--root", dir, "--listen", "127.0.0.1:0", "--shutdown-grace", "200ms")
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	c.Write([]byte("GET /big HTTP/1.1\r\nHost: a\r\n\r\n"))
	// The response has begun: the request is in flight. Stop reading.
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status = %d, want 0\n%s", code, s.stderr())
	}
	for _, want := range []string{"level=WARN msg=\"grace period over; connections cut\" connections=1", "msg=stopped"} {
		if !strings.Contains(s.stderr(), want) {
			t.Errorf("log lacks %q:\n%s", want, s.stderr())
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"help", "serve"}, {"serve", "--help"}, {"serve", "-h"},
		{"demo", "--help"}, {"help", "demo"}, {"version", "--help"},
		{"check", "--help"}, {"graph", "--help"}, {"fmt", "--help"}, {"reload", "--help"}, {"help", "check"},
	} {
		r := sluice(t, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: sluice") || !strings.Contains(r.stdout, "Exit status") {
			t.Errorf("sluice %q = %d, stdout %q", args, r.code, r.stdout)
		}
	}
	for cmd, flags := range map[string][]string{
		"serve":  {"-root", "-server-header", "-listen", "-tls-cert FILE", "-tls-key FILE", "-browse", "-compress", "-c FILE", "-print-config", "-pid-file", "-workers", "-shutdown-grace"},
		"check":  {"-c FILE", "-explain"},
		"graph":  {"-c FILE", "-svg"},
		"fmt":    {"-c FILE", "-w"},
		"reload": {"-c FILE", "-pid-file", "-pid N"},
	} {
		r := sluice(t, cmd, "--help")
		for _, f := range flags {
			if !strings.Contains(r.stdout, f) {
				t.Errorf("%s --help does not list %s:\n%s", cmd, f, r.stdout)
			}
		}
	}
	if r := sluice(t, "help"); !strings.Contains(r.stdout, "reload") || !strings.Contains(r.stdout, "docs/config.md") {
		t.Errorf("help does not list the config commands:\n%s", r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{}, {"serve", "--bogus"}, {"demo", "--root", "."}, {"nosuchcommand"}, {"serve", "extra"},
		{"help", "nosuchcommand"}, {"serve", "--listen"},
	} {
		r := sluice(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "Usage: sluice") {
			t.Errorf("sluice %q = %d, stderr %q; want 2 and usage", args, r.code, r.stderr)
		}
	}
}

func TestRuntimeErrors(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--root", filepath.Join(t.TempDir(), "missing"), "--listen", "127.0.0.1:0"},
		{"serve", "--root", t.TempDir(), "--listen", "256.0.0.1:bad"},
	} {
		r := sluice(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "level=ERROR") {
			t.Errorf("sluice %q = %d, stderr %q; want 1 and an error", args, r.code, r.stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	r := sluice(t, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sluice ") || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("sluice version = %d %q", r.code, r.stdout)
	}
	for _, flag := range []string{"--version", "-version"} {
		if f := sluice(t, flag); f != r {
			t.Errorf("sluice %s = %+v, want as sluice version: %+v", flag, f, r)
		}
	}
	if r := sluice(t, "--version", "x"); r.code != 2 {
		t.Errorf("sluice --version x = %d %q", r.code, r.stderr)
	}
}
