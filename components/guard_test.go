package components

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// Helpers shared by the tests of the access components (ipfilter,
// ratelimit, htaccess, basic_auth, log), and the test of how they treat
// clients on a Unix socket (package clientaddr tests the resolution
// itself).

// guardQuiet is a logger for components whose errors a test provokes.
var guardQuiet = slog.New(slog.DiscardHandler)

// guardText is a Source answering 200 with body s.
func guardText(s string) pipe.Source {
	return func(c *pipe.Conn) pipe.Content {
		c.Header().Set("Content-Type", "text/plain; charset=utf-8")
		return func(w pipe.Writer) error {
			_, err := io.WriteString(w, s)
			return err
		}
	}
}

// A client over a Unix socket has no IP address: "all" still matches
// it, so deny: [all] and "Deny from all" refuse it, while a proxy on the
// socket, trusted with "unix:", names the client in its header. Before,
// every rule missed such a client: ipfilter {deny: [all]} and htaccess
// "Deny from all" let it through.
func TestClientIPUnixSocket(t *testing.T) {
	root := htaTree(t, map[string]string{
		"closed/.htaccess": "Order Deny,Allow\nDeny from all\n",
		"open/.htaccess":   "Order Allow,Deny\nAllow from all\nDeny from 10.0.0.0/8\n",
	})
	mustFilter := func(o IPFilterOptions) pipe.Component {
		f, err := NewIPFilter(o)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	hta, err := NewHtaccess(HtaccessOptions{Root: root, TrustedProxies: []string{"unix:"}, Logger: guardQuiet})
	if err != nil {
		t.Fatal(err)
	}
	rl, err := NewRateLimit(RateLimitOptions{Rate: 0.001, Burst: 1, TrustedProxies: []string{"unix:"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		comp pipe.Component
		path string
		xff  string
		want int
	}{
		{"ipfilter deny all", mustFilter(IPFilterOptions{Deny: []string{"all"}}), "/", "", 403},
		{"ipfilter allow all", mustFilter(IPFilterOptions{Allow: []string{"all"}, Deny: []string{"10.0.0.0/8"}}), "/", "", 200},
		{"ipfilter allow and deny all", mustFilter(IPFilterOptions{Allow: []string{"all"}, Deny: []string{"all"}}), "/", "", 403},
		{"ipfilter allow list", mustFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}}), "/", "10.1.2.3", 403},
		{"ipfilter block list", mustFilter(IPFilterOptions{Deny: []string{"10.0.0.0/8"}}), "/", "", 200},
		{"ipfilter untrusted header", mustFilter(IPFilterOptions{Deny: []string{"10.0.0.0/8", "::/0", "0.0.0.0/0"}}), "/", "10.1.2.3", 200},
		{"ipfilter trusted proxy", mustFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}, TrustedProxies: []string{"unix:"}}), "/", "10.1.2.3", 200},
		{"ipfilter trusted proxy refuses", mustFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}, TrustedProxies: []string{"unix:"}}), "/", "192.0.2.1", 403},
		{"ipfilter trusted proxy, no header", mustFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}, TrustedProxies: []string{"unix:"}}), "/", "", 403},
		{"htaccess deny from all", hta, "/closed/x", "", 403},
		{"htaccess allow from all", hta, "/open/x", "", 200},
		{"htaccess through a trusted proxy", hta, "/open/x", "10.1.2.3", 403},
		{"ratelimit by header", rl, "/", "192.0.2.1", 200},
		{"ratelimit by header, again", rl, "/", "192.0.2.1", 429},
		{"ratelimit by header, another client", rl, "/", "192.0.2.2", 200},
	} {
		sock := filepath.Join(t.TempDir(), "s")
		url := "unix:" + sluicetest.NewServer(t, pipe.Handler(pipe.Chain{tt.comp, guardText("in")}),
			sluicetest.Listen("unix", sock)).Addr
		hdr := ""
		if tt.xff != "" {
			hdr = "X-Forwarded-For: " + tt.xff + "\r\n"
		}
		resp, _ := sluicetest.RoundTrip(t, url, "GET "+tt.path+" HTTP/1.1\r\nHost: x\r\n"+hdr+"Connection: close\r\n\r\n")
		if resp.StatusCode != tt.want {
			t.Errorf("%s: GET %s over a Unix socket: %d, want %d", tt.name, tt.path, resp.StatusCode, tt.want)
		}
	}
}

func guardTCP(ip string) net.Addr {
	return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}
}

// guardExampleGet is guardGet for examples.
func guardExampleGet(url string, hdr ...string) (*http.Response, string) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		panic(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(err)
	}
	return resp, string(b)
}
