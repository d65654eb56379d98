package upstream

import (
	"net"
	"net/url"
	"strings"
	"testing"
)

// FuzzParseHost: parseHost never panics; a host it accepts has an
// address to dial (a path, or host:port), and the http:// upstream an
// error tells to write instead, when it is a URL with a host, is one it
// accepts (or one whose own error says what to write).
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:9001", "http://[::1]:80/", "unix:/run/app.sock", "127.0.0.1:9001",
		"http//127.0.0.1:9001", "http:/x:1", "x:1/api", "/run/app.sock", "http://x:1/api", "https://a", "http://u@x", "", "unix:", "http://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHost[*fakeConn](s)
		if err == nil {
			if h.Network == "tcp" {
				if _, _, err := net.SplitHostPort(h.Addr); err != nil {
					t.Fatalf("%q: accepted with address %q: %v", s, h.Addr, err)
				}
			} else if h.Network != "unix" || h.Addr == "" {
				t.Fatalf("%q: accepted as %s %q", s, h.Network, h.Addr)
			}
			return
		}
		_, fix, ok := strings.Cut(err.Error(), ": write ")
		if !ok {
			return
		}
		fix, _, _ = strings.Cut(fix, " (")
		host, ok := strings.CutPrefix(fix, "http://")
		if u, err := url.Parse(fix); !ok || err != nil || u.Host != host ||
			strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") != "" {
			return // a suggestion built from text that is no host
		}
		if _, err2 := parseHost[*fakeConn](fix); err2 != nil && !strings.Contains(err2.Error(), "write") {
			t.Fatalf("%q: %v; the suggestion %q fails: %v", s, err, fix, err2)
		}
	})
}
