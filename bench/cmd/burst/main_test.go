package main

import (
	"net"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// serve starts an engine server answering every request with h, and
// returns its address.
func serve(t *testing.T, h engine.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &engine.Server{Handler: h}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// A burst on open connections, and one that opens them, are answered
// and counted; an answer that is not the page, or that closes the
// connection, is a failure.
func TestBurst(t *testing.T) {
	good := serve(t, func(w engine.ResponseWriter, r *engine.Request) { w.Write(page) })
	for _, tt := range []struct {
		name    string
		h       engine.HandlerFunc
		wantErr string
	}{
		{"page", nil, ""},
		{"other body", func(w engine.ResponseWriter, r *engine.Request) { w.Write([]byte("no")) }, "2 bytes"},
		{"status", func(w engine.ResponseWriter, r *engine.Request) { w.WriteHeader(404); w.Write(page) }, "GET: 404"},
		{"close", func(w engine.ResponseWriter, r *engine.Request) {
			w.Header().Set("Connection", "close")
			w.Write(page)
		}, "close true"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := good
			if tt.h != nil {
				addr = serve(t, tt.h)
			}
			const n = 50
			conns := make([]*client, n)
			t.Cleanup(func() {
				for _, c := range conns {
					if c != nil {
						c.nc.Close()
					}
				}
			})
			if err := each(8, n, func(i int) error {
				c, err := open(addr)
				conns[i] = c
				return err
			}); err != nil {
				t.Fatal(err)
			}
			answered, err := burst(conns, "")
			if tt.wantErr == "" {
				if answered != n || err != nil {
					t.Fatalf("burst on open connections: %d of %d answered, %v", answered, n, err)
				}
				fresh := make([]*client, n)
				answered, err = burst(fresh, addr)
				for _, c := range fresh {
					if c != nil {
						c.nc.Close()
					}
				}
				if answered != n || err != nil {
					t.Fatalf("burst of new connections: %d of %d answered, %v", answered, n, err)
				}
				return
			}
			if answered != 0 || err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("%d of %d answered, first failure %v; want none answered, a failure saying %q", answered, n, err, tt.wantErr)
			}
		})
	}
}
