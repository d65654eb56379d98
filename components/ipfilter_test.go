package components

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// Clients other than 127.0.0.1 are simulated by a trusted loopback proxy
// that names them in X-Forwarded-For.
func TestIPFilter(t *testing.T) {
	tests := []struct {
		name        string
		allow, deny []string
		ok, refused []string // client addresses
	}{
		{"allow list", []string{"10.0.0.0/8", "192.0.2.7"}, nil,
			[]string{"10.1.2.3", "192.0.2.7"}, []string{"192.0.2.8", "11.0.0.1", "2001:db8::1"}},
		{"block list", nil, []string{"10.0.0.0/8", "2001:db8::/32"},
			[]string{"11.0.0.1", "2001:db9::1"}, []string{"10.9.9.9", "2001:db8::1"}},
		{"narrower deny in allow", []string{"10.0.0.0/8"}, []string{"10.6.0.0/16"},
			[]string{"10.1.2.3"}, []string{"10.6.2.3", "8.8.8.8"}},
		{"narrower allow in deny all", []string{"10.6.6.6", "2001:db8::/64"}, []string{"all"},
			[]string{"10.6.6.6", "2001:db8::5"}, []string{"10.6.6.7", "2001:db8:1::5"}},
		{"same prefix: deny wins", []string{"10.0.0.0/8"}, []string{"10.0.0.0/8"},
			nil, []string{"10.0.0.1"}},
		{"IPv4-mapped entry matches IPv4", []string{"::ffff:10.0.0.0/104"}, nil,
			[]string{"10.0.0.1"}, []string{"11.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewIPFilter(IPFilterOptions{Allow: tt.allow, Deny: tt.deny, TrustedProxies: []string{"127.0.0.0/8"}})
			if err != nil {
				t.Fatal(err)
			}
			url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{f, guardText("in")})).URL
			for _, client := range tt.ok {
				if resp, body := sluicetest.Get(t, url+"/", "X-Forwarded-For", client); resp.StatusCode != 200 || body != "in" {
					t.Errorf("%s: %d %q, want 200", client, resp.StatusCode, body)
				}
			}
			for _, client := range tt.refused {
				if resp, body := sluicetest.Get(t, url+"/", "X-Forwarded-For", client); resp.StatusCode != 403 || !strings.Contains(body, "access denied") {
					t.Errorf("%s: %d %q, want 403", client, resp.StatusCode, body)
				}
			}
		})
	}
}

// Without trusted proxies the header is not believed: the TCP peer is
// the client.
func TestIPFilterIgnoresHeaderFromUntrustedPeer(t *testing.T) {
	f, err := NewIPFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}})
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{f, guardText("in")})).URL
	if resp, _ := sluicetest.Get(t, url+"/", "X-Forwarded-For", "10.1.1.1"); resp.StatusCode != 403 {
		t.Errorf("spoofed X-Forwarded-For let in: %d", resp.StatusCode)
	}
	f, _ = NewIPFilter(IPFilterOptions{Deny: []string{"127.0.0.1"}, TrustedProxies: []string{"10.0.0.0/8"}})
	url = sluicetest.NewServer(t, pipe.Handler(pipe.Chain{f, guardText("in")})).URL
	if resp, _ := sluicetest.Get(t, url+"/", "X-Forwarded-For", "192.0.2.1"); resp.StatusCode != 403 {
		t.Errorf("peer 127.0.0.1 (not a trusted proxy) hid behind X-Forwarded-For: %d", resp.StatusCode)
	}
	f, _ = NewIPFilter(IPFilterOptions{Deny: []string{"192.0.2.1"}, TrustedProxies: []string{"127.0.0.1"}, ClientIPHeader: "Forwarded"})
	url = sluicetest.NewServer(t, pipe.Handler(pipe.Chain{f, guardText("in")})).URL
	if resp, _ := sluicetest.Get(t, url+"/", "Forwarded", `for="192.0.2.1:1234"`); resp.StatusCode != 403 {
		t.Errorf("Forwarded for= not applied: %d", resp.StatusCode)
	}
	if resp, _ := sluicetest.Get(t, url+"/", "X-Forwarded-For", "192.0.2.1"); resp.StatusCode != 200 {
		t.Errorf("X-Forwarded-For read although Forwarded configured: %d", resp.StatusCode)
	}
}

// A real IPv6 client on ::1, when the host has IPv6 loopback.
func TestIPFilterIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	ln.Close()
	for _, tt := range []struct {
		opts IPFilterOptions
		want int
	}{
		{IPFilterOptions{Allow: []string{"::1"}}, 200},
		{IPFilterOptions{Allow: []string{"127.0.0.0/8"}}, 403},
		{IPFilterOptions{Deny: []string{"::/0"}}, 403},
		{IPFilterOptions{Deny: []string{"0.0.0.0/0"}}, 200},
		{IPFilterOptions{Allow: []string{"2001:db8::/32"}, TrustedProxies: []string{"::1/128"}}, 200}, // via X-Forwarded-For
	} {
		f, err := NewIPFilter(tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{f, guardText("in")}), sluicetest.Listen("tcp", "[::1]:0")).URL
		if resp, _ := sluicetest.Get(t, url+"/", "X-Forwarded-For", "2001:db8::77"); resp.StatusCode != tt.want {
			t.Errorf("%+v: %d, want %d", tt.opts, resp.StatusCode, tt.want)
		}
	}
}

func TestIPFilterOptions(t *testing.T) {
	for _, tt := range []struct {
		opts IPFilterOptions
		err  string
	}{
		{IPFilterOptions{}, "ipfilter: no allow or deny entries"},
		{IPFilterOptions{Allow: []string{"10.0.0.0/8", "ten"}}, `ipfilter: allow: "ten" is not an IP address or CIDR`},
		{IPFilterOptions{Deny: []string{"10.0.0.300"}}, `ipfilter: deny: "10.0.0.300"`},
		{IPFilterOptions{Deny: []string{"all"}, TrustedProxies: []string{"x"}}, `ipfilter: trusted_proxies: "x"`},
	} {
		if _, err := NewIPFilter(tt.opts); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NewIPFilter(%+v) = %v, want %q", tt.opts, err, tt.err)
		}
	}
}

func ExampleNewIPFilter() {
	filter, err := NewIPFilter(IPFilterOptions{
		Allow:          []string{"10.0.0.0/8"},
		Deny:           []string{"10.6.0.0/16"},
		TrustedProxies: []string{"127.0.0.1"}, // stands in for a reverse proxy
	})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{filter, guardText("welcome\n")}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL
	for _, client := range []string{"10.1.2.3", "10.6.2.3", "192.0.2.1"} {
		resp, _ := guardExampleGet(url, "X-Forwarded-For", client)
		fmt.Println(client, resp.StatusCode)
	}
	// Output:
	// 10.1.2.3 200
	// 10.6.2.3 403
	// 192.0.2.1 403
}

func BenchmarkIPFilter(b *testing.B) {
	f, err := newIPFilter(IPFilterOptions{
		Allow: []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "2001:db8::/32"},
		Deny:  []string{"10.6.0.0/16", "10.7.0.0/16", "192.168.66.0/24", "2001:db8:bad::/48"},
	})
	if err != nil {
		b.Fatal(err)
	}
	a := netip.MustParseAddr("192.168.1.1")
	b.ReportAllocs()
	for b.Loop() {
		f.allowed(a)
	}
}
