package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// BenchmarkProxiedGET measures proxied GETs of a small body, end to end
// over loopback sockets — client, proxy and upstream in this process —
// through a Proxy and, in the same run against the same upstream (a
// minimal engine server), through net/http/httputil's ReverseProxy:
//
//	go test -run '^$' -bench ProxiedGET -benchtime 20000x ./proxy
//
// The ratio of the two ns/op is the figure; absolute numbers include the
// client's and the upstream's work.
func BenchmarkProxiedGET(b *testing.B) {
	up := sluicetest.NewServer(b, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteString("hello, world\n")
	}))
	p, err := New(Options{Upstreams: []string{up.URL}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	sluice := sluicetest.NewServer(b, pipe.Handler(p))

	target, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 64}
	std := httptest.NewServer(rp)
	defer std.Close()

	for _, c := range []struct{ name, url string }{{"sluice", sluice.URL}, {"httputil", std.URL}} {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(c.url + "/")
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
