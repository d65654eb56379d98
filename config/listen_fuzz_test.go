package config

import (
	"net"
	"strings"
	"testing"
)

// FuzzParseAddress: ParseAddress never panics; an address it accepts is
// a Unix socket's path or a host:port, and an address its error tells to
// write instead, when that is a host:port, is one it accepts.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{":80", "127.0.0.1:8080", "[::1]:443", "unix:/run/s.sock", "*:80", "8080", "localhost",
		"http://127.0.0.1:8080/", "https://example.com", "http://[::1]", "https://", "unix:", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err == nil {
			if a.Network == "tcp" {
				if _, _, err := net.SplitHostPort(a.Addr); err != nil {
					t.Fatalf("%q accepted as %q: %v", s, a.Addr, err)
				}
			} else if a.Network != "unix" || a.Addr == "" {
				t.Fatalf("%q accepted as %s %q", s, a.Network, a.Addr)
			}
			return
		}
		_, fix, ok := strings.Cut(err.Error(), ": write ")
		if !ok {
			return
		}
		fix, _, _ = strings.Cut(fix, " (")
		if host, port, err := net.SplitHostPort(fix); err != nil || strings.ContainsAny(host, " /*") || strings.Trim(port, "0123456789") != "" {
			return // not a host:port, or a placeholder (host:port)
		}
		if _, err2 := ParseAddress(fix); err2 != nil {
			t.Fatalf("%q: %v; the suggestion %q fails: %v", s, err, fix, err2)
		}
	})
}
