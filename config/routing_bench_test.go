package config

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// The cost of choosing a route, per request, through the handler a
// config builds: a small config of 10 routes; 1,000 routes for one host
// (exact, prefix and parameter patterns in equal parts); 1,000 routes
// spread over 100 hosts with host: (the way to serve several hosts
// before sites); and 100 sites of 10 routes each. Each request's pipeline
// is one text source, so the difference between them is the routing.
//
//	go test ./config -run '^$' -bench Routing -benchtime 2s -count 5

// siteRoutes is one site's 10 routes, with path parameters; a route's
// text says which it is.
func siteRoutes(indent, host string) string {
	var b strings.Builder
	for _, m := range []string{"/", "/static/", "/api/", "/api/v1/", `"/blog/{slug}"`, `"/article/{id:int}"`, "/about", "/contact", "/feed.xml", "/docs/"} {
		fmt.Fprintf(&b, "%s- match: %s\n", indent, m)
		if host != "" {
			fmt.Fprintf(&b, "%s  host: %s\n", indent, host)
		}
		fmt.Fprintf(&b, "%s  pipeline: [{text: %q}]\n", indent, host+strings.Trim(m, `"`))
	}
	return b.String()
}

// siteRequests are requests for each of siteRoutes' kinds of pattern,
// and one that only "/" matches, each with the pattern that takes it.
var siteRequests = [][2]string{
	{"/", "/"}, {"/static/css/site.css", "/static/"}, {"/api/v1/users/7", "/api/v1/"},
	{"/blog/hello", "/blog/{slug}"}, {"/article/42", "/article/{id:int}"}, {"/about", "/about"},
	{"/feed.xml", "/feed.xml"}, {"/nothing/here", "/"},
}

// routingConfig is a config the benchmark routes through, and the
// requests sent to it: host, path, and the body of the route meant for
// it.
type routingConfig struct {
	name     string
	text     string
	requests [][3]string
}

// routingConfigs generates the benchmark's configs.
func routingConfigs() []routingConfig {
	type cfg = routingConfig
	var out []cfg

	small := cfg{name: "10routes", text: "routes:\n" + siteRoutes("  ", "")}
	for _, p := range siteRequests {
		small.requests = append(small.requests, [3]string{"example.com", p[0], p[1]})
	}
	out = append(out, small)

	var b strings.Builder
	b.WriteString("routes:\n")
	flat := cfg{name: "1000routes"}
	for i := range 1000 {
		var m, p string
		switch i % 3 {
		case 0:
			m, p = fmt.Sprintf("/e%d", i), fmt.Sprintf("/e%d", i)
		case 1:
			m, p = fmt.Sprintf("/p%d/", i), fmt.Sprintf("/p%d/a/b.html", i)
		default:
			m, p = fmt.Sprintf(`"/c%d/{id:int}"`, i), fmt.Sprintf("/c%d/42", i)
		}
		if i == 999 {
			m, p = "/", "/nothing/here" // the catch-all, reached after the longer prefixes of the path
		}
		fmt.Fprintf(&b, "  - match: %s\n    pipeline: [{text: %q}]\n", m, strings.Trim(m, `"`))
		if i%125 == 0 || i == 999 {
			flat.requests = append(flat.requests, [3]string{"example.com", p, strings.Trim(m, `"`)})
		}
	}
	flat.text = b.String()
	out = append(out, flat)

	hosts := cfg{name: "100hosts_1000routes"}
	sites := cfg{name: "100sites_1000routes"}
	var hb, sb strings.Builder
	hb.WriteString("routes:\n")
	sb.WriteString("sites:\n")
	for i := range 100 {
		host := fmt.Sprintf("site%d.example.com", i)
		hb.WriteString(siteRoutes("  ", host))
		fmt.Fprintf(&sb, "  - hosts: [%s, www.%s]\n    routes:\n%s", host, host, siteRoutes("      ", ""))
		if i%12 == 0 {
			for j, p := range siteRequests {
				if (i/12+j)%4 == 0 {
					hosts.requests = append(hosts.requests, [3]string{host, p[0], host + p[1]})
					sites.requests = append(sites.requests, [3]string{"www." + host, p[0], p[1]})
				}
			}
		}
	}
	hosts.text, sites.text = hb.String(), sb.String()
	return append(out, hosts, sites)
}

// discardWriter is an engine.ResponseWriter that drops the response.
type discardWriter struct{ h engine.Header }

func (d *discardWriter) Header() *engine.Header            { return &d.h }
func (d *discardWriter) WriteHeader(int)                   {}
func (d *discardWriter) Write(p []byte) (int, error)       { return len(p), nil }
func (d *discardWriter) WriteString(s string) (int, error) { return len(s), nil }
func (d *discardWriter) Flush() error                      { return nil }

func BenchmarkRouting(b *testing.B) {
	for _, rc := range routingConfigs() {
		b.Run(rc.name, func(b *testing.B) {
			cfg, err := testLoader().Parse(filepath.Join(b.TempDir(), "bench.yaml"), []byte(rc.text))
			if err != nil {
				b.Fatal(err)
			}
			defer cfg.Close()
			h := cfg.Handler()
			var reqs []*engine.Request
			for _, hp := range rc.requests {
				r, err := engine.NewRequest(&http.Request{Method: "GET", URL: &url.URL{Path: hp[1]}, Host: hp[0]})
				if err != nil {
					b.Fatal(err)
				}
				reqs = append(reqs, r)
			}
			w := &discardWriter{}
			for _, r := range reqs { // every request finds its own route
				h.Serve(w, r)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.Serve(w, reqs[i])
				if i++; i == len(reqs) {
					i = 0
				}
			}
		})
	}
}

// The benchmark's configs route each request to the route meant for it.
func TestRoutingBenchConfigs(t *testing.T) {
	for _, rc := range routingConfigs() {
		cfg, err := testLoader().Parse(filepath.Join(t.TempDir(), "bench.yaml"), []byte(rc.text))
		if err != nil {
			t.Fatalf("%s: %v", rc.name, err)
		}
		if len(rc.requests) < 8 {
			t.Errorf("%s: %d requests", rc.name, len(rc.requests))
		}
		h := cfg.Handler()
		for _, hp := range rc.requests {
			r, err := engine.NewRequest(&http.Request{Method: "GET", URL: &url.URL{Path: hp[1]}, Host: hp[0]})
			if err != nil {
				t.Fatal(err)
			}
			w := &bodyWriter{}
			h.Serve(w, r)
			if w.status != 200 || w.body.String() != hp[2] {
				t.Errorf("%s: %s%s: %d %q, want %q", rc.name, hp[0], hp[1], w.status, w.body.String(), hp[2])
			}
		}
		cfg.Close()
	}
}

// bodyWriter is an engine.ResponseWriter that keeps the status and body.
type bodyWriter struct {
	discardWriter
	status int
	body   strings.Builder
}

func (w *bodyWriter) WriteHeader(s int)                 { w.status = s }
func (w *bodyWriter) Write(p []byte) (int, error)       { return w.body.Write(p) }
func (w *bodyWriter) WriteString(s string) (int, error) { return w.body.WriteString(s) }
