// Package otlp makes a tracing.Tracer that records spans with the
// OpenTelemetry SDK and sends them to a collector over OTLP/HTTP: a ratio
// sampler (a caller's sampled flag followed only with HonorParent), a
// batch processor with a bounded queue, and an exporter that writes the
// protobuf itself, linking neither gRPC nor the protobuf runtime. It is
// apart from package tracing so that the components whose hooks call
// tracing (proxy, fastcgi, cache) do not link the SDK into a program that
// does not trace.
package otlp

import (
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluice-server/sluice/tracing"
)

// New returns a Tracer exporting to o.Endpoint. It checks the options
// (tracing.Options.Check) and opens no connection: the first batch does.
// Its Shutdown sends the spans still queued.
func New(o tracing.Options) (*tracing.Tracer, error) {
	endpoint, err := o.Check()
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return NewWithExporter(o, newExporter(endpoint, o.Headers, log)), nil
}

// NewWithExporter returns a Tracer as New does whose spans go to exp
// instead, in batches; o must have been checked (tracing.Options.Check).
// For tests, and for programs with an exporter of their own.
func NewWithExporter(o tracing.Options, exp sdktrace.SpanExporter) *tracing.Tracer {
	root := sdktrace.TraceIDRatioBased(*o.Sample)
	var sampler sdktrace.Sampler
	if o.HonorParent {
		sampler = sdktrace.ParentBased(root)
	} else {
		// A remote parent's flag is not believed; a span of ours follows
		// its parent, so a request's spans are recorded together.
		sampler = sdktrace.ParentBased(root,
			sdktrace.WithRemoteParentSampled(root), sdktrace.WithRemoteParentNotSampled(root))
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sampler),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", o.Service))),
		sdktrace.WithBatcher(exp, sdktrace.WithMaxQueueSize(o.Queue), sdktrace.WithBatchTimeout(o.BatchWait),
			sdktrace.WithMaxExportBatchSize(min(o.Queue, 512))),
	)
	return tracing.NewTracer(provider.Tracer("github.com/sluice-server/sluice"), o, provider.Shutdown)
}
