package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-server/sluice/sluicetest"
)

// A reload and a stop send the spans the retired config still queues, at
// once: with a batch_wait of an hour nothing else would send them.
func TestTracingFlushedOnReloadAndStop(t *testing.T) {
	var mu sync.Mutex
	names := map[string]int{}
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names[s.Name]++
				}
			}
		}
	}))
	defer col.Close()
	count := func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return names[name]
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	conf := func(match string) string {
		return fmt.Sprintf("listen: 127.0.0.1:0\ntracing: {endpoint: %q, batch_wait: 1h}\nroutes:\n  - match: %s\n    pipeline: [{text: hi}]\n", col.URL, match)
	}
	writeFile(t, file, conf("/a"))
	s, _ := newServer(t, fileLoad(file))
	start(t, s)
	addr := onlyAddr(t, s).String()
	sluicetest.RoundTrip(t, addr, "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	writeFile(t, file, conf("/b"))
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	sluicetest.WaitFor(t, "the old config's span sent on the reload", func() bool { return count("GET /a") == 1 })
	sluicetest.RoundTrip(t, addr, "GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	sluicetest.WaitFor(t, "the last config's span sent on the stop", func() bool { return count("GET /b") == 1 })
}
