package fastcgi

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// A FastCGI upstream from DNS is written dns+tcp://name:port (or srv+tcp)
// and gives tcp:// hosts; http is not FastCGI's scheme.
func TestUpstreamsFromDNS(t *testing.T) {
	dns := sluicetest.StartDNS(t)
	dns.SetA("php.test", 30, "127.0.0.1", "127.0.0.2")
	logger, _ := sluicetest.Logger()
	cl, err := New(Options{Options: upstream.Options{Name: "fcgi-dns", Upstreams: []string{"dns+tcp://php.test:9000"}, Resolver: dns.Addr, MaxConns: 4},
		Root: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for _, h := range cl.grp.Hosts() {
		got = append(got, h.Name+" "+h.Addr+" "+h.Authority)
	}
	want := []string{"tcp://127.0.0.1:9000 127.0.0.1:9000 php.test:9000", "tcp://127.0.0.2:9000 127.0.0.2:9000 php.test:9000"}
	if !slices.Equal(got, want) {
		t.Fatalf("hosts %q, want %q", got, want)
	}
	if s, ok := upstream.LookupSet("fcgi-dns"); !ok || s.State().Transport != "fastcgi" || s.State().Source != "dns+tcp://php.test:9000" {
		t.Fatalf("live set %v %v", s, ok)
	}
	_, err = New(Options{Options: upstream.Options{Upstreams: []string{"dns+http://php.test:9000"}, Resolver: dns.Addr}, Root: t.TempDir(), Logger: logger})
	if err == nil || !strings.Contains(err.Error(), "the scheme after dns+ is the transport's") {
		t.Fatalf("dns+http for FastCGI: %v", err)
	}
}
