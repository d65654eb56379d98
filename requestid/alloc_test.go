//go:build !race

package requestid

import (
	"io"
	"net"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// Giving a request an ID allocates nothing, whether it is made or a
// trusted proxy's is kept, once the request's fields have room (the
// engine reuses them from request to request).
func TestStageAllocs(t *testing.T) {
	s, err := New(Options{TrustedProxies: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	h := pipe.Handler(pipe.Chain{s, pipe.Pipe(func(*pipe.Conn) bool { return true })})
	peer := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	other := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}
	for _, tt := range []struct {
		name string
		addr net.Addr
		sent bool
	}{{"made", other, false}, {"replaced", other, true}, {"kept", peer, true}} {
		fields := make([]engine.Field, 0, 8)
		req := &engine.Request{Method: []byte("GET"), Path: []byte("/"), Host: []byte("a"), Body: io.LimitReader(nil, 0), RemoteAddr: tt.addr}
		w := &discard{}
		sent := []engine.Field{{Name: []byte("Host"), Value: []byte("a")}}
		if tt.sent {
			sent = append(sent, engine.Field{Name: []byte("X-Request-Id"), Value: []byte("abc")})
		}
		run := func() {
			req.Fields = append(fields[:0], sent...)
			h.Serve(w, req)
		}
		run()
		if allocs := testing.AllocsPerRun(500, run); allocs != 0 {
			t.Errorf("%s: %v allocations per request, want 0", tt.name, allocs)
		}
	}
}
