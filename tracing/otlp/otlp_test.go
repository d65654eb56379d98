package otlp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/tracing"
)

// memExporter keeps the spans exported to it.
type memExporter struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (m *memExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spans = append(m.spans, spans...)
	return nil
}

func (m *memExporter) Shutdown(context.Context) error { return nil }

// testProvider records every span, under the resource and scope New's
// Tracer gives them, and sends them to exp.
func testProvider(exp sdktrace.SpanExporter) (trace.Tracer, *sdktrace.TracerProvider) {
	p := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "sluice"))))
	return p.Tracer("github.com/sluice-server/sluice"), p
}

// A collector that refuses an export, or cannot be reached, is logged
// about; the export does not fail the processor.
func TestExporterFailures(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer refuse.Close()
	for _, url := range []string{refuse.URL + "/v1/traces", "http://127.0.0.1:1/v1/traces"} {
		log, buf := sluicetest.Logger()
		tr, p := testProvider(newExporter(url, nil, log))
		_, sp := tr.Start(context.Background(), "x")
		sp.End()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("%s: shutdown: %v", url, err)
		}
		if !strings.Contains(buf.String(), "tracing: ") || !strings.Contains(buf.String(), "spans=1") {
			t.Errorf("%s: log %q", url, buf)
		}
	}
}

// New checks its options, and its Tracer's Shutdown sends what is queued.
func TestNew(t *testing.T) {
	if _, err := New(tracing.Options{Endpoint: "ftp://x"}); err == nil || !strings.Contains(err.Error(), "endpoint:") {
		t.Errorf("New with a bad endpoint: %v", err)
	}
	got := make(chan string, 1)
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path + " " + r.Header.Get("Content-Type") + " " + r.Header.Get("X-Key")
	}))
	defer col.Close()
	tr, err := New(tracing.Options{Endpoint: col.URL, Headers: map[string]string{"X-Key": "k"}, BatchWait: 3600e9})
	if err != nil {
		t.Fatal(err)
	}
	if o := tr.Options(); *o.Sample != 1 || o.Service != "sluice" || o.Queue != tracing.DefaultQueue {
		t.Errorf("defaults %+v", o)
	}
	tr.Shutdown(context.Background()) // nothing queued: nothing sent
	select {
	case s := <-got:
		t.Errorf("an export of nothing: %s", s)
	default:
	}
}
