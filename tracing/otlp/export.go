package otlp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// exporter sends spans to an OTLP/HTTP collector as protobuf. It is the
// SDK's otlptracehttp without its import of the collector's service
// package, which links gRPC, nor of the generated message types, which
// link the protobuf runtime's reflection (0.7 MB of symbols): the
// messages of opentelemetry/proto/trace/v1/trace.proto (and the common
// and resource ones it uses) are written field by field, their numbers
// below as the .proto files give them, in the wire format of wire.go.
type exporter struct {
	url     string
	headers map[string]string
	client  *http.Client
	log     *slog.Logger
	stopped atomic.Bool
}

// exportTimeout bounds one batch's POST.
const exportTimeout = 10 * time.Second

func newExporter(url string, headers map[string]string, log *slog.Logger) *exporter {
	return &exporter{url: url, headers: headers, client: &http.Client{Timeout: exportTimeout}, log: log}
}

// ExportSpans implements sdktrace.SpanExporter. A batch the collector
// refuses or cannot be reached for is logged and dropped: the queue is
// not held up for it.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 || e.stopped.Load() {
		return nil
	}
	body := encodeRequest(spans)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.log.Warn("tracing: cannot export spans", "endpoint", e.url, "spans", len(spans), "err", err)
		return nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e.log.Warn("tracing: the collector refused spans", "endpoint", e.url, "spans", len(spans), "status", resp.StatusCode)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (e *exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}

// encodeRequest returns the ExportTraceServiceRequest of spans: one
// ResourceSpans per resource, one ScopeSpans per instrumentation scope,
// in the order first seen.
func encodeRequest(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		res        attribute.Distinct
		name, vers string
	}
	var resOrder []attribute.Distinct
	resOf := map[attribute.Distinct]sdktrace.ReadOnlySpan{}
	scopeOrder := map[attribute.Distinct][]scopeKey{}
	byScope := map[scopeKey][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		rk := s.Resource().Equivalent()
		if _, ok := resOf[rk]; !ok {
			resOf[rk] = s
			resOrder = append(resOrder, rk)
		}
		is := s.InstrumentationScope()
		sk := scopeKey{rk, is.Name, is.Version}
		if _, ok := byScope[sk]; !ok {
			scopeOrder[rk] = append(scopeOrder[rk], sk)
		}
		byScope[sk] = append(byScope[sk], s)
	}
	var out []byte
	for _, rk := range resOrder {
		out = appendMessage(out, 1, func(b []byte) []byte { // ExportTraceServiceRequest.resource_spans
			res := resOf[rk].Resource()
			b = appendMessage(b, 1, func(b []byte) []byte { // ResourceSpans.resource
				return appendKeyValues(b, 1, res.Attributes()) // Resource.attributes
			})
			for _, sk := range scopeOrder[rk] {
				ss := byScope[sk]
				b = appendMessage(b, 2, func(b []byte) []byte { // ResourceSpans.scope_spans
					is := ss[0].InstrumentationScope()
					b = appendMessage(b, 1, func(b []byte) []byte { // ScopeSpans.scope
						b = appendString(b, 1, is.Name)
						return appendString(b, 2, is.Version)
					})
					for _, s := range ss {
						b = appendMessage(b, 2, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendString(b, 3, is.SchemaURL)
				})
			}
			return appendString(b, 3, res.SchemaURL())
		})
	}
	return out
}

// appendSpan appends the fields of a Span message.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	b = appendVarint(b, 6, uint64(spanKind(s.SpanKind())))
	b = appendFixed64(b, 7, uint64(s.StartTime().UnixNano()))
	b = appendFixed64(b, 8, uint64(s.EndTime().UnixNano()))
	b = appendKeyValues(b, 9, s.Attributes())
	b = appendVarint(b, 10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		b = appendMessage(b, 11, func(b []byte) []byte {
			b = appendFixed64(b, 1, uint64(ev.Time.UnixNano()))
			b = appendString(b, 2, ev.Name)
			b = appendKeyValues(b, 3, ev.Attributes)
			return appendVarint(b, 4, uint64(ev.DroppedAttributeCount))
		})
	}
	b = appendVarint(b, 12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = appendMessage(b, 13, func(b []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, 1, ltid[:])
			b = appendBytes(b, 2, lsid[:])
			b = appendString(b, 3, l.SpanContext.TraceState().String())
			b = appendKeyValues(b, 4, l.Attributes)
			b = appendVarint(b, 5, uint64(l.DroppedAttributeCount))
			return appendFixed32(b, 6, uint32(l.SpanContext.TraceFlags())|spanFlagsRemote(l.SpanContext))
		})
	}
	b = appendVarint(b, 14, uint64(s.DroppedLinks()))
	if st := s.Status(); st.Code != codes.Unset || st.Description != "" {
		b = appendMessage(b, 15, func(b []byte) []byte {
			b = appendString(b, 2, st.Description)
			code := uint64(0) // STATUS_CODE_UNSET
			switch st.Code {
			case codes.Ok:
				code = 1
			case codes.Error:
				code = 2
			}
			return appendVarint(b, 3, code)
		})
	}
	return appendFixed32(b, 16, uint32(sc.TraceFlags())|spanFlagsRemote(s.Parent()))
}

// spanFlagsRemote is the SpanFlags bits saying that whether the parent
// is remote is known (0x100), and that it is (0x200).
func spanFlagsRemote(parent trace.SpanContext) uint32 {
	f := uint32(0x100)
	if parent.IsRemote() {
		f |= 0x200
	}
	return f
}

// spanKind is the Span.SpanKind enum value of k.
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

// appendKeyValues appends attrs as the repeated KeyValue field num.
func appendKeyValues(b []byte, num wireNumber, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		b = appendMessage(b, num, func(b []byte) []byte {
			b = appendString(b, 1, string(kv.Key))
			return appendMessage(b, 2, func(b []byte) []byte { return appendAnyValue(b, kv.Value) })
		})
	}
	return b
}

// appendAnyValue appends the fields of the AnyValue message of v.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = appendTag(b, 2, wireVarint)
		return appendRawVarint(b, boolVarint(v.AsBool()))
	case attribute.INT64:
		b = appendTag(b, 3, wireVarint)
		return appendRawVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = appendTag(b, 4, wireFixed64)
		return appendRawFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.BOOLSLICE:
		return appendArray(b, len(v.AsBoolSlice()), func(i int) attribute.Value { return attribute.BoolValue(v.AsBoolSlice()[i]) })
	case attribute.INT64SLICE:
		return appendArray(b, len(v.AsInt64Slice()), func(i int) attribute.Value { return attribute.Int64Value(v.AsInt64Slice()[i]) })
	case attribute.FLOAT64SLICE:
		return appendArray(b, len(v.AsFloat64Slice()), func(i int) attribute.Value { return attribute.Float64Value(v.AsFloat64Slice()[i]) })
	case attribute.STRINGSLICE:
		return appendArray(b, len(v.AsStringSlice()), func(i int) attribute.Value { return attribute.StringValue(v.AsStringSlice()[i]) })
	}
	b = appendTag(b, 1, wireBytes)
	return appendRawString(b, v.String())
}

func boolVarint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// appendArray appends an AnyValue's array_value of n values.
func appendArray(b []byte, n int, at func(int) attribute.Value) []byte {
	return appendMessage(b, 5, func(b []byte) []byte {
		for i := range n {
			b = appendMessage(b, 1, func(b []byte) []byte { return appendAnyValue(b, at(i)) })
		}
		return b
	})
}

// appendMessage appends the message field num, whose fields fill writes.
// An embedded message is written even when empty: it is present.
func appendMessage(b []byte, num wireNumber, fill func([]byte) []byte) []byte {
	b = appendTag(b, num, wireBytes)
	return appendRawBytes(b, fill(nil))
}

// appendBytes appends the bytes field num, left out when empty (proto3).
func appendBytes(b []byte, num wireNumber, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = appendTag(b, num, wireBytes)
	return appendRawBytes(b, v)
}

func appendString(b []byte, num wireNumber, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, num, wireBytes)
	return appendRawString(b, s)
}

func appendVarint(b []byte, num wireNumber, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = appendTag(b, num, wireVarint)
	return appendRawVarint(b, v)
}

func appendFixed64(b []byte, num wireNumber, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = appendTag(b, num, wireFixed64)
	return appendRawFixed64(b, v)
}

func appendFixed32(b []byte, num wireNumber, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = appendTag(b, num, wireFixed32)
	return appendRawFixed32(b, v)
}
