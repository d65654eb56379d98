package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// switchStage is a source that answers its body (for /slow once release
// is closed, or the connection is gone) and counts its Close calls.
type switchStage struct {
	body    string
	release chan struct{}
	entered chan struct{}
	gone    atomic.Bool // /slow ended because its connection was gone
	closed  atomic.Int32
}

func (s *switchStage) Handle(c *pipe.Conn) bool {
	if string(c.Request.Path) == "/slow" {
		s.entered <- struct{}{}
		select {
		case <-s.release:
		case <-c.Gone():
			s.gone.Store(true)
		}
	}
	c.Header().Set("Content-Type", "text/plain")
	c.SetContent(func(w pipe.Writer) error {
		_, err := io.WriteString(w, s.body)
		return err
	})
	return true
}

func (s *switchStage) Close() error { s.closed.Add(1); return nil }

// switchConfig is a config of one route served by stage.
func switchConfig(t *testing.T, stage *switchStage) *config.Config {
	t.Helper()
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/"}, Pipeline: stage})
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := components.Lookup("text")
	return &config.Config{
		Routes: []*config.Route{{Match: []string{"/"}, Stages: []*config.Stage{{Name: "test", Registration: reg, Component: stage}}}},
		Router: rt,
	}
}

// A request in flight finishes on the old config; requests after Swap,
// on the same keep-alive connection too, get the new one; the old config
// is closed only when its last request is done.
func TestSwitchSwap(t *testing.T) {
	a := &switchStage{body: "A", release: make(chan struct{}), entered: make(chan struct{}, 1)}
	b := &switchStage{body: "B", release: make(chan struct{}), entered: make(chan struct{}, 1)}
	sw := NewSwitch(switchConfig(t, a))
	srv := sluicetest.NewServer(t, sw)

	keep := sluicetest.Dial(t, srv.URL)
	if _, got := keep.RoundTrip(t, getRoot); got != "A" {
		t.Fatalf("before Swap: %q, want A", got)
	}
	slow := sluicetest.Dial(t, srv.URL)
	fmt.Fprintf(slow, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-a.entered // the slow request is in A's pipeline

	if old := sw.Swap(switchConfig(t, b)); old.Routes[0].Stages[0].Component != a {
		t.Errorf("Swap returned the wrong config")
	}
	if _, got := keep.RoundTrip(t, getRoot); got != "B" {
		t.Errorf("after Swap, same connection: %q, want B", got)
	}
	if n := a.closed.Load(); n != 0 {
		t.Errorf("old config closed %d times while a request is in flight", n)
	}
	close(a.release)
	if _, got := sluicetest.ReadResponse(t, slow.R, "GET"); got != "A" {
		t.Errorf("request in flight across Swap: %q, want A", got)
	}
	for i := 0; a.closed.Load() == 0 && i < 1000; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if n := a.closed.Load(); n != 1 {
		t.Errorf("old config closed %d times, want 1", n)
	}
	sw.Close()
	if n := b.closed.Load(); n != 1 {
		t.Errorf("current config closed %d times by Switch.Close, want 1", n)
	}
}

// Concurrent requests across many swaps: every request is answered by one
// of the configs and every retired config is closed exactly once.
func TestSwitchConcurrentSwaps(t *testing.T) {
	stages := []*switchStage{{body: "0"}}
	sw := NewSwitch(switchConfig(t, stages[0]))
	stop := make(chan struct{})
	done := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				g := sw.acquire()
				if g.cfg == nil {
					done <- fmt.Errorf("nil config")
					return
				}
				if s := g.cfg.Routes[0].Stages[0].Component.(*switchStage); s.closed.Load() != 0 {
					done <- fmt.Errorf("config %s used after Close", s.body)
					g.release()
					return
				}
				g.release()
			}
		}()
	}
	for i := 1; i <= 200; i++ {
		s := &switchStage{body: fmt.Sprint(i)}
		stages = append(stages, s)
		sw.Swap(switchConfig(t, s))
	}
	close(stop)
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	for _, s := range stages[:len(stages)-1] {
		if n := s.closed.Load(); n != 1 {
			t.Errorf("config %s closed %d times, want 1", s.body, n)
		}
	}
}

// A config Swap replaced is closed once Grace has passed, under the
// request still in flight, and only once.
func TestSwitchGrace(t *testing.T) {
	a := &switchStage{body: "A", release: make(chan struct{}), entered: make(chan struct{}, 1)}
	b := &switchStage{body: "B"}
	sw := NewSwitch(switchConfig(t, a))
	sw.Grace = 10 * time.Millisecond
	srv := sluicetest.NewServer(t, sw)
	c := sluicetest.Dial(t, srv.URL)
	fmt.Fprintf(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-a.entered
	sw.Swap(switchConfig(t, b))
	for i := 0; a.closed.Load() == 0 && i < 2000; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if n := a.closed.Load(); n != 1 {
		t.Fatalf("old config closed %d times with its grace period over, want 1", n)
	}
	close(a.release)
	sluicetest.ReadResponse(t, c.R, "GET") // the request in flight
	if _, got := c.RoundTrip(t, getRoot); got != "B" {
		t.Errorf("after the request in flight: %q, want B", got)
	}
	sw.Close()
	if a.closed.Load() != 1 || b.closed.Load() != 1 {
		t.Errorf("closed %d and %d times, want 1 and 1", a.closed.Load(), b.closed.Load())
	}
}

// switchCGI is a config whose one route runs a CGI script that records
// its pid in dir/pid and runs until killed.
func switchCGI(t *testing.T, dir string) *config.Config {
	t.Helper()
	script := filepath.Join(dir, "run.cgi")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho $$ > "+dir+"/pid.tmp && mv "+dir+"/pid.tmp "+dir+"/pid\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := &config.Loader{Context: components.Context{Logger: slog.New(slog.DiscardHandler)}}
	cfg, err := l.Parse(filepath.Join(dir, "test.yaml"),
		[]byte("routes: [{match: /, pipeline: [{cgi: {script: run.cgi, timeout: 1h}}]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// switchPid waits for the pid a switchCGI script records.
func switchPid(t *testing.T, dir string) int {
	t.Helper()
	for range 2000 {
		if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the CGI script did not start")
	return 0
}

func processExists(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }

// A CGI program still running when its config is closed — at once by
// Close at shutdown, or after the grace period of a reload — is killed
// and reaped, not left behind for PID 1; its request gets 503.
func TestSwitchKillsCGI(t *testing.T) {
	for _, how := range []string{"close", "reload"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			sw := NewSwitch(switchCGI(t, dir))
			sw.Grace = 10 * time.Millisecond
			srv := sluicetest.NewServer(t, sw)
			c := sluicetest.Dial(t, srv.URL)
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			pid := switchPid(t, dir)
			if how == "close" {
				sw.Close()
				if processExists(pid) {
					t.Errorf("CGI program %d still exists when Close returns", pid)
				}
			} else {
				sw.Swap(switchConfig(t, &switchStage{body: "B"}))
				for i := 0; processExists(pid) && i < 2000; i++ {
					time.Sleep(5 * time.Millisecond)
				}
				if processExists(pid) {
					t.Errorf("CGI program %d still exists after the grace period", pid)
				}
			}
			if resp, _ := sluicetest.ReadResponse(t, c.R, "GET"); resp.StatusCode != 503 {
				t.Errorf("the program's request: %d, want 503", resp.StatusCode)
			}
			sw.Close()
		})
	}
}

// A Swap that lands between acquire's load of the current config and its
// count retires that config with no request counted, so it is closed at
// once: acquire must notice it was replaced and serve the request with
// the new config. The test hook forces that interleaving.
func TestSwitchSwapDuringAcquire(t *testing.T) {
	a, b := &switchStage{body: "A"}, &switchStage{body: "B"}
	sw := NewSwitch(switchConfig(t, a))
	next := switchConfig(t, b)
	sw.afterLoad = func() { // set before Serve starts; run on its connection's goroutine
		sw.afterLoad = nil
		sw.Swap(next)
	}
	srv := sluicetest.NewServer(t, sw)
	c := sluicetest.Dial(t, srv.URL)
	if _, got := c.RoundTrip(t, getRoot); got != "B" {
		t.Errorf("request whose acquire raced a Swap: %q, want B (A was closed by the Swap)", got)
	}
	if n := a.closed.Load(); n != 1 {
		t.Errorf("retired config closed %d times, want 1", n)
	}
	if n := b.closed.Load(); n != 0 {
		t.Errorf("current config closed %d times, want 0", n)
	}
}
