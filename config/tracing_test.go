package config

import (
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/fcgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// collector is an OTLP/HTTP receiver: it decodes each export with the
// collector's own protobuf types and keeps the spans.
type collector struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string // service.name of each span's resource
	headers []string // the X-Api-Key of each export
	srv     *httptest.Server
}

func newCollector(t *testing.T) *collector {
	col := &collector{}
	col.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			t.Errorf("collector: %s %s %s: not an OTLP/HTTP protobuf export", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		col.mu.Lock()
		defer col.mu.Unlock()
		col.headers = append(col.headers, r.Header.Get("X-Api-Key"))
		for _, rs := range req.ResourceSpans {
			svc := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					svc = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					col.spans = append(col.spans, s)
					col.service = append(col.service, svc)
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(col.srv.Close)
	return col
}

func (col *collector) all() []*tracepb.Span {
	col.mu.Lock()
	defer col.mu.Unlock()
	return append([]*tracepb.Span(nil), col.spans...)
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func attrInt(s *tracepb.Span, key string) int64 {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.GetValue().GetIntValue()
		}
	}
	return -1
}

// A traced request through a cache and a proxy (HTTP/1.1 and h2c), or to
// a FastCGI application, makes a server span, the child of the caller's
// traceparent, with a cache span and an attempt span under it; the upstream receives a traceparent whose
// parent is the attempt's span; the spans arrive at the collector when
// the config closes. Sampling 0 sends nothing, unless the caller's
// sampled flag is honoured.
func TestTracingSpans(t *testing.T) {
	var mu sync.Mutex
	var upstreamSaw []string // traceparent values the upstreams received
	echo := pipe.Source(func(c *pipe.Conn) pipe.Content {
		mu.Lock()
		upstreamSaw = append(upstreamSaw, string(c.Request.HeaderList("traceparent")))
		mu.Unlock()
		c.Header().Set("Cache-Control", "no-store")
		return func(w pipe.Writer) error { _, err := w.Write([]byte("up")); return err }
	})
	h1 := sluicetest.NewServer(t, pipe.Handler(echo))
	h2 := sluicetest.NewServer(t, pipe.Handler(echo), sluicetest.HTTP2())
	site := t.TempDir()
	if err := os.MkdirAll(filepath.Join(site, "public", "fcgi"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "public", "fcgi", "id.php"), []byte("<?php"), 0o644); err != nil {
		t.Fatal(err)
	}
	fln, err := net.Listen("unix", filepath.Join(site, "fcgi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go fcgi.Serve(fln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upstreamSaw = append(upstreamSaw, r.Header.Get("Traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "up")
	}))
	t.Cleanup(func() { fln.Close() })
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

	for _, tt := range []struct {
		name     string
		sample   string
		honor    bool
		flags    string // the caller's traceparent flags
		recorded bool
	}{
		{name: "sampled", sample: "1", flags: "01", recorded: true},
		{name: "sampled, caller says not", sample: "1", flags: "00", recorded: true},
		{name: "sample 0", sample: "0", flags: "01", recorded: false},
		{name: "sample 0, caller honoured", sample: "0", honor: true, flags: "01", recorded: true},
		{name: "caller honoured, says not", sample: "1", honor: true, flags: "00", recorded: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			col := newCollector(t)
			mu.Lock()
			upstreamSaw = nil
			mu.Unlock()
			cfg, err := parseString(t, site, fmt.Sprintf(`
tracing: {endpoint: %q, sample: %s, honor_parent: %v, service: shop, headers: {X-Api-Key: k1}, batch_wait: 10ms}
routes:
  - match: /h1
    pipeline: [{cache: {size: 1MB}}, {proxy: "http://%s"}]
  - match: /h2
    pipeline: [{proxy: {upstreams: ["http://%s"], transport: h2c}}]
  - match: /fcgi/
    pipeline: [{fastcgi: {upstreams: ["unix:%s"], root: ./public}}]
`, col.srv.URL, tt.sample, tt.honor, h1.Addr, h2.Addr, filepath.Join(site, "fcgi.sock")))
			if err != nil {
				t.Fatal(err)
			}
			srv := sluicetest.NewServer(t, cfg.Handler())
			parent := "00-" + callerTrace + "-" + callerSpan + "-" + tt.flags
			for _, path := range []string{"/h1", "/h2", "/fcgi/id.php"} {
				resp, body := sluicetest.RoundTrip(t, srv.Addr, "GET "+path+" HTTP/1.1\r\nHost: a\r\ntraceparent: "+parent+"\r\ntracestate: vendor=1\r\n\r\n")
				if resp.StatusCode != 200 || body != "up" {
					t.Fatalf("%s: %d %q", path, resp.StatusCode, body)
				}
			}
			// Every request over (the server span ends as its response
			// does), the config's close sends the spans.
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			if err := cfg.Close(); err != nil {
				t.Fatal(err)
			}
			spans := col.all()
			mu.Lock()
			saw := append([]string(nil), upstreamSaw...)
			mu.Unlock()
			if len(saw) != 3 {
				t.Fatalf("upstreams saw %q", saw)
			}
			if !tt.recorded {
				if len(spans) != 0 {
					t.Errorf("%d spans sent, want none", len(spans))
				}
				for _, tp := range saw {
					if !strings.HasPrefix(tp, "00-"+callerTrace+"-") || strings.Contains(tp, callerSpan) || !strings.HasSuffix(tp, "-00") {
						t.Errorf("upstream's traceparent %q: want the caller's trace, a span of ours, not sampled", tp)
					}
				}
				return
			}
			byID := map[string]*tracepb.Span{}
			for _, s := range spans {
				byID[hex.EncodeToString(s.SpanId)] = s
				if hex.EncodeToString(s.TraceId) != callerTrace {
					t.Errorf("span %q in trace %x, want the caller's", s.Name, s.TraceId)
				}
			}
			if got := strings.Join(col.service, ","); got != strings.TrimSuffix(strings.Repeat("shop,", len(spans)), ",") || col.headers[0] != "k1" {
				t.Errorf("services %q, header %q", got, col.headers)
			}
			// Per request: the server span under the caller's, and an
			// attempt span under it whose ID the upstream got as parent;
			// the cache's under the server span for /h1.
			for i, route := range []string{"/h1", "/h2", "/fcgi/"} {
				var server *tracepb.Span
				for _, s := range spans {
					if s.Kind == tracepb.Span_SPAN_KIND_SERVER && attr(s, "http.route") == route {
						server = s
					}
				}
				if server == nil {
					t.Fatalf("%s: no server span among %d", route, len(spans))
				}
				if hex.EncodeToString(server.ParentSpanId) != callerSpan || server.Name != "GET "+route ||
					attrInt(server, "http.response.status_code") != 200 || attr(server, "http.request.method") != "GET" ||
					server.TraceState != "vendor=1" || len(attr(server, "sluice.request_id")) != 32 {
					t.Errorf("%s: server span %v", route, server)
				}
				tp := saw[i]
				parts := strings.Split(tp, "-")
				if len(parts) != 4 {
					t.Fatalf("%s: upstream's traceparent %q", route, tp)
				}
				attempt := byID[parts[2]]
				if attempt == nil || attempt.Kind != tracepb.Span_SPAN_KIND_CLIENT || !equalID(attempt.ParentSpanId, server.SpanId) ||
					attrInt(attempt, "http.response.status_code") != 200 || attr(attempt, "sluice.component") == "" || parts[3] != "01" {
					t.Errorf("%s: upstream's traceparent %q names %v, want a client span under the server's", route, tp, attempt)
				}
				cached := false
				for _, s := range spans {
					if s.Name == "cache" && equalID(s.ParentSpanId, server.SpanId) {
						cached = attr(s, "sluice.cache.status") != ""
					}
				}
				if cached != (route == "/h1") {
					t.Errorf("%s: a cache span with a status under the server's: %v", route, cached)
				}
			}
		})
	}
}

func equalID(a, b []byte) bool { return len(a) > 0 && string(a) == string(b) }

func TestTracingKey(t *testing.T) {
	const routes = "\nroutes: [{match: /, pipeline: [echo]}]\n"
	cfg, err := parseString(t, "dir", "tracing: {endpoint: http://127.0.0.1:4318}"+routes)
	if err != nil || cfg.Tracer == nil || *cfg.Tracer.Options().Sample != 1 || cfg.Tracer.Options().Service != "sluice" {
		t.Fatalf("defaults: %v", err)
	}
	if cfg, err := parseString(t, "dir", "tracing: false"+routes); err != nil || cfg.Tracer != nil {
		t.Errorf("tracing: false: %v", err)
	}
	for _, tt := range []struct{ text, want string }{
		{"tracing: true", "test.yaml:1:10: tracing: true needs a collector to send to: write a map, e.g. tracing: {endpoint:"},
		{"tracing: {sample: 0.5}", "test.yaml:1:10: tracing: endpoint: want the OTLP/HTTP collector's URL"},
		{"tracing: {endpoint: 127.0.0.1:4318}", `tracing: endpoint: "127.0.0.1:4318" is not an http or https URL`},
		{"tracing: {endpoint: http://a, sample: 2}", "tracing: sample: want a fraction from 0 to 1"},
		{"tracing: {endpoint: http://a, sample: x}", "test.yaml:1:39: tracing.sample: want a number"},
		{"tracing: {endpoint: http://a, queue: -1}", "tracing: queue: want a number of spans"},
		{"tracing: {endpoint: http://a, headers: {\"a b\": c}}", `tracing: headers: "a b"`},
		{"tracing: {endpoint: http://a, rate: 1}", "test.yaml:1:31: unknown tracing key"},
	} {
		_, err := parseString(t, "dir", tt.text+routes)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.text, err, tt.want)
		}
	}
}
