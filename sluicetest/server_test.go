package sluicetest_test

import (
	"bufio"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

var hello = engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
	io.WriteString(w, "hello")
})

// A server answers on a loopback TCP port or a Unix socket, and Close
// stops it: the port refuses connections after, and a second Close
// returns the first one's result.
func TestNewServer(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts func(t *testing.T) []sluicetest.Option
	}{
		{"tcp", func(*testing.T) []sluicetest.Option { return nil }},
		{"unix", func(t *testing.T) []sluicetest.Option {
			return []sluicetest.Option{sluicetest.Listen("unix", filepath.Join(t.TempDir(), "s"))}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			configured := false
			s := sluicetest.NewServer(t, hello, append(tt.opts(t),
				sluicetest.Configure(func(*engine.Server) { configured = true }))...)
			if !configured {
				t.Error("Configure's function was not called")
			}
			if (s.URL != "") != (tt.name == "tcp") {
				t.Errorf("URL %q on %s", s.URL, s.Network)
			}
			c, err := s.Dial()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "hello" {
				t.Errorf("got %s %q, want 200 hello", resp.Status, body)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if c, err := s.Dial(); err == nil {
				c.Close()
				t.Error("server still accepts connections after Close")
			}
		})
	}
}

// Start reports an address it cannot listen on.
func TestStartListenError(t *testing.T) {
	if s, err := sluicetest.Start(hello, sluicetest.Listen("tcp", "256.0.0.1:0")); err == nil {
		s.Close()
		t.Fatal("Start on an invalid address succeeded")
	}
}
