package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sluicetest"
)

// loopback is the address the tests listen on.
var loopback = config.Address{Network: "tcp", Addr: "127.0.0.1:0"}

// newServer returns a Server that loads with load and logs to the
// returned buffer; it is shut down when the test ends, if it still runs.
func newServer(t *testing.T, load func(components.Context) (*config.Config, error)) (*Server, *sluicetest.Buffer) {
	t.Helper()
	log := &sluicetest.Buffer{}
	s := &Server{Load: load, Name: "test", Stderr: log, Logger: slog.New(slog.NewTextHandler(log, nil))}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s, log
}

// fileLoad loads the config file named file.
func fileLoad(file string) func(components.Context) (*config.Config, error) {
	return func(ctx components.Context) (*config.Config, error) {
		return (&config.Loader{Context: ctx}).Load(file)
	}
}

// textConfig is a config file listening on listen (YAML: an address or a
// list) whose one route answers body.
func textConfig(listen, body string) string {
	return fmt.Sprintf("listen: %s\nroutes:\n  - match: /\n    pipeline:\n      - text: %q\n", listen, body)
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// start starts s and fails the test if it cannot.
func start(t *testing.T, s *Server) {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// getRoot is the request for / that tests send on a connection they keep.
const getRoot = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"

// dial opens a connection to addr, one of s.Addrs(), as sluicetest.Dial
// does: it only spells a Unix socket's address as Dial takes it.
func dial(t *testing.T, addr net.Addr) *sluicetest.Conn {
	t.Helper()
	if addr.Network() == "unix" {
		return sluicetest.Dial(t, "unix:"+addr.String())
	}
	return sluicetest.Dial(t, addr.String())
}

// body requests / on a new connection to addr and returns the body.
func body(t *testing.T, addr net.Addr) string {
	t.Helper()
	_, b := dial(t, addr).RoundTrip(t, getRoot)
	return b
}

// onlyAddr returns s's one listening address.
func onlyAddr(t *testing.T, s *Server) net.Addr {
	t.Helper()
	addrs := s.Addrs()
	if len(addrs) != 1 {
		t.Fatalf("Addrs() = %v, want one", addrs)
	}
	return addrs[0]
}

// goConfig is switchConfig listening on the loopback.
func goConfig(t *testing.T, stage *switchStage) *config.Config {
	cfg := switchConfig(t, stage)
	cfg.Listen = []config.Address{loopback}
	cfg.Workers = 1
	return cfg
}

// Start serves the config; a reload swaps in the new one for new
// requests while a request in flight finishes on the old one, which is
// closed once it is done.
func TestReloadWhileInFlight(t *testing.T) {
	a := &switchStage{body: "A", release: make(chan struct{}), entered: make(chan struct{}, 1)}
	b := &switchStage{body: "B"}
	var mu sync.Mutex
	next := a
	s, log := newServer(t, func(components.Context) (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		return goConfig(t, next), nil
	})
	start(t, s)
	addr := onlyAddr(t, s)
	if got := body(t, addr); got != "A" {
		t.Fatalf("GET / = %q, want A", got)
	}
	slow := dial(t, addr)
	fmt.Fprintf(slow, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-a.entered

	mu.Lock()
	next = b
	mu.Unlock()
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := body(t, addr); got != "B" {
		t.Errorf("after the reload: %q, want B", got)
	}
	if n := a.closed.Load(); n != 0 {
		t.Errorf("old config closed %d times under its request in flight", n)
	}
	close(a.release)
	if _, got := sluicetest.ReadResponse(t, slow.R, "GET"); got != "A" {
		t.Errorf("the request in flight across the reload: %q, want A", got)
	}
	sluicetest.WaitFor(t, "the old config to close", func() bool { return a.closed.Load() == 1 })
	if !strings.Contains(log.String(), "msg=reloaded config=test routes=1") {
		t.Errorf("log lacks the reload:\n%s", log)
	}
}

// An invalid config, or one whose new address cannot be opened, is
// rejected: the running config keeps serving, on the same listeners.
func TestReloadRejected(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	writeFile(t, file, textConfig("127.0.0.1:0", "one"))
	s, log := newServer(t, fileLoad(file))
	start(t, s)
	addr := onlyAddr(t, s)

	writeFile(t, file, "routes: [{match: /, pipeline: [txt]}]\n")
	err := s.Reload()
	var le *LoadError
	var errs config.Errors
	if !errors.As(err, &le) || !errors.As(err, &errs) || !strings.Contains(errs.Error(), `unknown component "txt"`) {
		t.Errorf("Reload of an invalid config = %v, want a *LoadError with the config's errors", err)
	}
	if got := body(t, addr); got != "one" {
		t.Errorf("after the rejected reload: %q, want one", got)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	writeFile(t, file, textConfig(fmt.Sprintf("[127.0.0.1:0, %q]", busy.Addr()), "two"))
	err = s.Reload()
	var lerr *ListenError
	if !errors.As(err, &lerr) || lerr.Addr.Addr != busy.Addr().String() || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("Reload adding a busy address = %v, want a *ListenError for %s", err, busy.Addr())
	}
	if got := body(t, addr); got != "one" {
		t.Errorf("after the rejected reload: %q, want one", got)
	}
	if got := s.Addrs(); len(got) != 1 || got[0].String() != addr.String() {
		t.Errorf("Addrs() = %v after the rejected reload, want [%s]", got, addr)
	}
	if n := strings.Count(log.String(), "reload rejected"); n != 2 {
		t.Errorf("log shows %d rejected reloads, want 2:\n%s", n, log)
	}
}

// A reload opens the addresses the config adds and closes those it
// drops; a connection accepted on a dropped address stays open and is
// served with the new config.
func TestReloadListenAddresses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	sock := filepath.Join(dir, "s.sock")
	writeFile(t, file, textConfig("127.0.0.1:0", "one"))
	s, _ := newServer(t, fileLoad(file))
	start(t, s)
	tcp := onlyAddr(t, s)
	keep := dial(t, tcp) // accepted before its address is dropped
	if _, got := keep.RoundTrip(t, getRoot); got != "one" {
		t.Fatalf("GET / = %q, want one", got)
	}

	writeFile(t, file, textConfig(fmt.Sprintf("[127.0.0.1:0, %q]", "unix:"+sock), "two"))
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload adding an address: %v", err)
	}
	addrs := s.Addrs()
	if len(addrs) != 2 || addrs[0].String() != tcp.String() || addrs[1].Network() != "unix" || addrs[1].String() != sock {
		t.Fatalf("Addrs() = %v, want [%s %s]", addrs, tcp, sock)
	}
	if got, got2 := body(t, tcp), body(t, addrs[1]); got != "two" || got2 != "two" {
		t.Errorf("after adding an address: %q on TCP, %q on the socket; want two", got, got2)
	}

	writeFile(t, file, textConfig(fmt.Sprintf("%q", "unix:"+sock), "three"))
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload dropping an address: %v", err)
	}
	if got := onlyAddr(t, s); got.String() != sock {
		t.Errorf("Addrs() = %v, want [%s]", got, sock)
	}
	if c, err := net.Dial("tcp", tcp.String()); err == nil {
		c.Close()
		t.Errorf("the dropped address %s still accepts connections", tcp)
	}
	if got := body(t, addrs[1]); got != "three" {
		t.Errorf("on the socket: %q, want three", got)
	}
	if _, got := keep.RoundTrip(t, getRoot); got != "three" {
		t.Errorf("on the connection accepted before the drop: %q, want three", got)
	}
}

// A config that said port 0 and then names the port it got keeps the
// socket: the reload neither reopens it (which would reset connections
// waiting to be accepted) nor logs closing it.
func TestReloadNamesTheBoundPort(t *testing.T) {
	file := filepath.Join(t.TempDir(), "site.yaml")
	writeFile(t, file, textConfig("127.0.0.1:0", "one"))
	s, log := newServer(t, fileLoad(file))
	start(t, s)
	addr := onlyAddr(t, s)
	s.lnMu.Lock()
	before := s.lns[0]
	s.lnMu.Unlock()
	writeFile(t, file, textConfig(addr.String(), "two"))
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	s.lnMu.Lock()
	after := s.lns
	s.lnMu.Unlock()
	if len(after) != 1 || after[0] != before || after[0].addr.Addr != addr.String() {
		t.Errorf("after the reload the listeners are %v, want the one opened before, now named %s", after, addr)
	}
	if strings.Contains(log.String(), "closing listener") {
		t.Errorf("the reload closed a listener:\n%s", log)
	}
	if got := body(t, addr); got != "two" {
		t.Errorf("after the reload: %q, want two", got)
	}
}

// A reload that moves a port from one address to an overlapping one
// (127.0.0.1:P to 0.0.0.0:P) closes the old socket first.
func TestReloadListenSamePort(t *testing.T) {
	file := filepath.Join(t.TempDir(), "site.yaml")
	writeFile(t, file, textConfig("127.0.0.1:0", "one"))
	s, _ := newServer(t, fileLoad(file))
	start(t, s)
	port := onlyAddr(t, s).(*net.TCPAddr).Port
	writeFile(t, file, textConfig("0.0.0.0:"+strconv.Itoa(port), "wildcard"))
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := onlyAddr(t, s).(*net.TCPAddr); got.Port != port || !got.IP.IsUnspecified() {
		t.Errorf("Addrs() = %v, want 0.0.0.0:%d", got, port)
	}
	if got := body(t, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}); got != "wildcard" {
		t.Errorf("after the reload: %q, want wildcard", got)
	}
}

// ReopenLogs opens the server's log file and the access log again under
// their names, after a log rotator has moved them.
func TestReopenLogs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	errLog, access := filepath.Join(dir, "error.log"), filepath.Join(dir, "access.log")
	writeFile(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nlog: {output: %q}\nroutes:\n  - match: /\n    pipeline: [{log: %q}, {text: hi}]\n", errLog, access))
	s, _ := newServer(t, fileLoad(file))
	start(t, s)
	addr := onlyAddr(t, s)
	body(t, addr)
	sluicetest.WaitFor(t, "the access log line", func() bool {
		b, _ := os.ReadFile(access)
		return bytes.Count(b, []byte("\n")) == 1
	})
	for _, f := range []string{errLog, access} {
		if err := os.Rename(f, f+".1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ReopenLogs(); err != nil {
		t.Fatalf("ReopenLogs: %v", err)
	}
	body(t, addr)
	sluicetest.WaitFor(t, "the access log line in the new file", func() bool {
		b, _ := os.ReadFile(access)
		return bytes.Count(b, []byte("\n")) == 1
	})
	if b, _ := os.ReadFile(access + ".1"); bytes.Count(b, []byte("\n")) != 1 {
		t.Errorf("the rotated access log has %q, want the first request only", b)
	}
	old, _ := os.ReadFile(errLog + ".1")
	cur, _ := os.ReadFile(errLog)
	if !bytes.Contains(old, []byte("msg=listening")) || bytes.Contains(old, []byte("reopened")) {
		t.Errorf("the rotated log: %q, want the lines before the reopen", old)
	}
	if !bytes.Contains(cur, []byte(`msg="log files reopened"`)) || bytes.Contains(cur, []byte("msg=listening")) {
		t.Errorf("the new log: %q, want the lines from the reopen on", cur)
	}
}

// Shutdown lets a request in flight finish within the grace period; when
// the period ends (ctx is done) it cuts the connections still open, which
// tells their requests (pipe.Conn.Gone), and returns. The pid file is
// written by Start and removed by Shutdown.
func TestShutdown(t *testing.T) {
	for _, cut := range []bool{false, true} {
		t.Run(map[bool]string{false: "within grace", true: "grace over"}[cut], func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "sluice.pid")
			a := &switchStage{body: "A", release: make(chan struct{}), entered: make(chan struct{}, 1)}
			s, log := newServer(t, func(components.Context) (*config.Config, error) {
				cfg := goConfig(t, a)
				cfg.PidFile = pidFile
				return cfg, nil
			})
			start(t, s)
			if b, err := os.ReadFile(pidFile); err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
				t.Errorf("pid file %q, %v; want %d", b, err, os.Getpid())
			}
			addr := onlyAddr(t, s)
			c := dial(t, addr)
			fmt.Fprintf(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
			<-a.entered

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.Shutdown(ctx) }()
			sluicetest.WaitFor(t, "the listener to close", func() bool {
				c, err := net.Dial("tcp", addr.String())
				if err == nil {
					c.Close()
				}
				return err != nil
			})
			if cut {
				cancel() // the grace period is over
			} else {
				close(a.release)
			}
			var serr error
			select {
			case serr = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("Shutdown has not returned")
			}
			if cut {
				if !errors.Is(serr, context.Canceled) || !strings.Contains(log.String(), `"grace period over; connections cut" connections=1`) {
					t.Errorf("Shutdown = %v, want context.Canceled and a warning; log:\n%s", serr, log)
				}
				sluicetest.WaitFor(t, "the request cut to be told its connection is gone", a.gone.Load)
			} else {
				if resp, got := sluicetest.ReadResponse(t, c.R, "GET"); got != "A" || !resp.Close {
					t.Errorf("the request in flight: %q, close %v; want A with Connection: close", got, resp.Close)
				}
				if serr != nil || a.gone.Load() {
					t.Errorf("Shutdown = %v (request cut: %v), want nil", serr, a.gone.Load())
				}
			}
			if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
				t.Errorf("pid file after Shutdown: %v, want it removed", err)
			}
			if n := a.closed.Load(); n != 1 {
				t.Errorf("config closed %d times by Shutdown, want 1", n)
			}
			if s.Addrs() != nil || !errors.Is(s.Reload(), ErrNotRunning) || !errors.Is(s.Shutdown(ctx), ErrNotRunning) {
				t.Errorf("after Shutdown: Addrs %v, Reload and Shutdown not ErrNotRunning", s.Addrs())
			}
		})
	}
}

// The pid file is removed only if it still names this process.
func TestPidFileOfAnother(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "sluice.pid")
	s, _ := newServer(t, func(components.Context) (*config.Config, error) {
		cfg := goConfig(t, &switchStage{body: "A"})
		cfg.PidFile = pidFile
		return cfg, nil
	})
	start(t, s)
	writeFile(t, pidFile, "1\n") // a server started since with the same pid_file
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(pidFile); string(b) != "1\n" {
		t.Errorf("another server's pid file: %q, %v; want it kept", b, err)
	}
}

// What Start cannot do, it undoes, and says: a config that does not load
// (returned, not logged), a listen address in use, a pid file that cannot
// be written.
func TestStartFails(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")

	writeFile(t, file, "routes: [{match: /, pipeline: [txt]}]\n")
	s, log := newServer(t, fileLoad(file))
	var le *LoadError
	if err := s.Start(); !errors.As(err, &le) || log.String() != "" {
		t.Errorf("Start with an invalid config = %v, log %q; want a *LoadError and nothing logged", err, log)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	errLog := filepath.Join(dir, "error.log")
	for _, tt := range []struct {
		name    string
		change  func(*config.Config)
		wantErr error
		wantLog string
	}{
		{"a busy address", func(cfg *config.Config) {
			cfg.Listen = append(cfg.Listen, config.Address{Network: "tcp", Addr: busy.Addr().String()})
		}, syscall.EADDRINUSE, `msg="cannot listen" addr=` + busy.Addr().String() + ` error="listen tcp ` + busy.Addr().String() +
			`: bind: address already in use" fix="another process listens on this address (ss -ltnp shows which): stop it, or change listen"`},
		{"an unwritable pid file", func(cfg *config.Config) {
			cfg.PidFile = filepath.Join(dir, "missing", "pid")
		}, os.ErrNotExist, `msg="cannot write the pid file" error="open ` + filepath.Join(dir, "missing", "pid") +
			`: no such file or directory" fix="its directory does not exist: create it, or change pid_file (or --pid-file)"`},
	} {
		stage := &switchStage{body: "A"}
		s, _ := newServer(t, func(components.Context) (*config.Config, error) {
			cfg := goConfig(t, stage)
			cfg.Log.Output = errLog
			tt.change(cfg)
			return cfg, nil
		})
		s.SetSlogDefault = true
		before := slog.Default()
		err := s.Start()
		logged, _ := os.ReadFile(errLog)
		if !errors.Is(err, tt.wantErr) || !strings.Contains(string(logged), tt.wantLog) {
			t.Errorf("Start with %s = %v, want %v, logged to the config's log:\n%s", tt.name, err, tt.wantErr, logged)
		}
		if s.Addrs() != nil || stage.closed.Load() != 1 || slog.Default() != before {
			t.Errorf("after Start failed with %s: Addrs() = %v, config closed %d times, slog's default restored: %v; want none, 1, true",
				tt.name, s.Addrs(), stage.closed.Load(), slog.Default() == before)
		}
		if s.Start() != ErrStarted {
			t.Errorf("after Start failed with %s, Start again is not refused", tt.name)
		}
	}
}

// Listeners handed in by Listen are served; one that fails for good ends
// Run with its error.
func TestListenHook(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	broken := &failingListener{Listener: ln, fail: make(chan struct{})}
	s, log := newServer(t, func(components.Context) (*config.Config, error) {
		return goConfig(t, &switchStage{body: "A"}), nil
	})
	var asked []config.Address
	s.Listen = func(a config.Address) (net.Listener, error) {
		asked = append(asked, a)
		return broken, nil
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	sluicetest.WaitFor(t, "the server to listen", func() bool { return len(s.Addrs()) == 1 })
	if got := body(t, ln.Addr()); got != "A" || len(asked) != 1 || asked[0] != loopback {
		t.Errorf("through the listener handed in: %q (asked for %v), want A", got, asked)
	}
	broken.breakDown()
	select {
	case err := <-done:
		if !errors.Is(err, errBroken) {
			t.Errorf("Run = %v, want the listener's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run has not returned after its listener failed")
	}
	if !strings.Contains(log.String(), `msg="server failed"`) || !strings.Contains(log.String(), "msg=stopped") {
		t.Errorf("log:\n%s", log)
	}
}

var errBroken = errors.New("broken listener")

// failingListener fails for good once broken.
type failingListener struct {
	net.Listener
	fail chan struct{}
}

// breakDown makes Accept fail from now on.
func (l *failingListener) breakDown() {
	close(l.fail)
	l.Listener.Close()
}

func (l *failingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		select {
		case <-l.fail:
			return nil, errBroken
		default:
		}
	}
	return c, err
}

// The config's warnings are logged at Start and at each reload, with
// their positions; a component's, logged as it is built, only then.
func TestWarningsLogged(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "users.htpasswd"), "alice:plaintext\n")
	file := filepath.Join(dir, "site.yaml")
	writeFile(t, file, "health: {timeout: 2s}\nlisten: 127.0.0.1:0\nroutes:\n  - match: /\n    pipeline:\n      - basic_auth: {realm: r, htpasswd: ./users.htpasswd}\n      - text: hi\n")
	s, log := newServer(t, fileLoad(file))
	start(t, s)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	health := fmt.Sprintf("level=WARN msg=%q at=%s:1:9", config.HealthWarning, file)
	if n := strings.Count(log.String(), health); n != 2 {
		t.Errorf("the health warning is logged %d times, want 2 (Start, Reload):\n%s", n, log)
	}
	if n := strings.Count(log.String(), "level=WARN msg=\"basic_auth: "); n != 2 {
		t.Errorf("the component's warning is logged %d times, want 2:\n%s", n, log)
	}
}

// HandleSignals: SIGHUP reloads, SIGUSR1 reopens the logs, SIGUSR2 is
// logged and ignored, SIGTERM ends Run.
func TestHandleSignals(t *testing.T) {
	file := filepath.Join(t.TempDir(), "site.yaml")
	writeFile(t, file, textConfig("127.0.0.1:0", "one"))
	s, log := newServer(t, fileLoad(file))
	ctx, stop := HandleSignals(context.Background(), s)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	sluicetest.WaitFor(t, "the server to listen", func() bool { return len(s.Addrs()) == 1 })
	addr := s.Addrs()[0]

	writeFile(t, file, textConfig("127.0.0.1:0", "two"))
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	sluicetest.WaitFor(t, "the reload", func() bool { return strings.Contains(log.String(), "msg=reloaded") })
	if got := body(t, addr); got != "two" {
		t.Errorf("after SIGHUP: %q, want two", got)
	}
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	sluicetest.WaitFor(t, "the reopen", func() bool { return strings.Contains(log.String(), "log files reopened") })
	syscall.Kill(os.Getpid(), syscall.SIGUSR2) // not the default action: the test goes on
	sluicetest.WaitFor(t, "the warning", func() bool { return strings.Contains(log.String(), "SIGUSR2 ignored") })
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Errorf("Run after SIGTERM = %v, want nil", err)
	}
	if !strings.Contains(log.String(), "msg=stopped") {
		t.Errorf("log:\n%s", log)
	}
}
