//go:build !race

package pipe

import (
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// Choosing a site allocates nothing, whatever the host's case and port,
// for exact names, wildcards and the default alike. Run without -race,
// which allocates.
func TestSitesAllocs(t *testing.T) {
	pass := Pipe(func(*Conn) bool { return true })
	s, err := NewSites(
		Site{Hosts: []string{"example.com"}, Handler: pass},
		Site{Hosts: []string{"*.example.org"}, Handler: pass},
		Site{Default: true, Handler: pass},
	)
	if err != nil {
		t.Fatal(err)
	}
	c := acquireConn(&discard{}, nil)
	defer releaseConn(c)
	for _, host := range []string{"example.com", "Example.COM:8080", "a.b.example.org", "other.net"} {
		c.Request = &engine.Request{Method: []byte("GET"), Path: []byte("/"), Host: []byte(host)}
		if got := testing.AllocsPerRun(100, func() { s.Handle(c) }); got != 0 {
			t.Errorf("%s: %v allocations, want 0", host, got)
		}
	}
}

// A router with routes for exact hosts finds a host's own router without
// allocating, whatever the host's case and port.
func TestRouterHostIndexAllocs(t *testing.T) {
	pass := Pipe(func(*Conn) bool { return true })
	rt, err := NewRouter(
		Route{Match: []string{"/"}, Host: "example.com", Pipeline: pass},
		Route{Match: []string{"/a/"}, Host: "*.example.org", Pipeline: pass},
		Route{Match: []string{"/"}, Pipeline: pass},
	)
	if err != nil {
		t.Fatal(err)
	}
	c := acquireConn(&discard{}, nil)
	defer releaseConn(c)
	for _, host := range []string{"example.com", "Example.COM:8080", "a.example.org", "other.net"} {
		c.Request = &engine.Request{Method: []byte("GET"), Path: []byte("/a/x"), Host: []byte(host)}
		if got := testing.AllocsPerRun(100, func() { rt.Handle(c) }); got != 0 {
			t.Errorf("%s: %v allocations, want 0", host, got)
		}
	}
}
