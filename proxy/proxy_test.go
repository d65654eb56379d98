package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// A request reaches the upstream with the forwarding fields and Via, and
// its response comes back with Via.
func TestProxyBasic(t *testing.T) {
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s host=%s xff=%s xfp=%s xfh=%s via=%s",
				r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("X-Forwarded-For"),
				r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-Host"), r.Header.Get("Via"))
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	resp, body := sluicetest.Get(t, srv.URL+"/a%20b/c?x=1", "X-Forwarded-For", "6.6.6.6")
	host := strings.TrimPrefix(srv.URL, "http://")
	want := "GET /a%20b/c?x=1 host=" + host + " xff=127.0.0.1 xfp=http xfh=" + host + " via=1.1 sluice"
	if resp.StatusCode != 200 || body != want {
		t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, body, want)
	}
	if v := resp.Header.Get("Via"); v != "1.1 sluice" {
		t.Errorf("response Via = %q", v)
	}
}
