package config

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// switchStage is a source that answers its body once release is closed
// (for /slow) and counts its Close calls.
type switchStage struct {
	body    string
	release chan struct{}
	entered chan struct{}
	closed  atomic.Int32
}

func (s *switchStage) Handle(c *pipe.Conn) bool {
	if string(c.Request.Path) == "/slow" {
		s.entered <- struct{}{}
		<-s.release
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
func switchConfig(t *testing.T, stage *switchStage) *Config {
	t.Helper()
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/"}, Pipeline: stage})
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := components.Lookup("text")
	return &Config{
		Routes: []*Route{{Match: []string{"/"}, Stages: []*Stage{{Name: "test", Registration: reg, Component: stage}}}},
		Router: rt,
	}
}

func switchGet(t *testing.T, c net.Conn, br *bufio.Reader, path string) string {
	t.Helper()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A request in flight finishes on the old config; requests after Swap,
// on the same keep-alive connection too, get the new one; the old config
// is closed only when its last request is done.
func TestSwitchSwap(t *testing.T) {
	a := &switchStage{body: "A", release: make(chan struct{}), entered: make(chan struct{}, 1)}
	b := &switchStage{body: "B", release: make(chan struct{}), entered: make(chan struct{}, 1)}
	sw := NewSwitch(switchConfig(t, a))
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &engine.Server{Handler: sw}
	go srv.Serve(ln)
	defer srv.Close()

	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(20 * time.Second))
		return c, bufio.NewReader(c)
	}
	keep, keepR := dial()
	if got := switchGet(t, keep, keepR, "/"); got != "A" {
		t.Fatalf("before Swap: %q, want A", got)
	}
	slow, slowR := dial()
	slowBody := make(chan string, 1)
	go func() {
		fmt.Fprintf(slow, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(slowR, nil)
		if err != nil {
			slowBody <- err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		slowBody <- string(body)
	}()
	<-a.entered // the slow request is in A's pipeline

	if old := sw.Swap(switchConfig(t, b)); old.Routes[0].Stages[0].Component != a {
		t.Errorf("Swap returned the wrong config")
	}
	if got := switchGet(t, keep, keepR, "/"); got != "B" {
		t.Errorf("after Swap, same connection: %q, want B", got)
	}
	if n := a.closed.Load(); n != 0 {
		t.Errorf("old config closed %d times while a request is in flight", n)
	}
	close(a.release)
	if got := <-slowBody; got != "A" {
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
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &engine.Server{Handler: sw}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if got := switchGet(t, c, bufio.NewReader(c), "/"); got != "B" {
		t.Errorf("request whose acquire raced a Swap: %q, want B (A was closed by the Swap)", got)
	}
	if n := a.closed.Load(); n != 1 {
		t.Errorf("retired config closed %d times, want 1", n)
	}
	if n := b.closed.Load(); n != 0 {
		t.Errorf("current config closed %d times, want 0", n)
	}
}
