package otlp

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The hand-written encoding decodes, with the collector's generated
// types, to the spans the SDK recorded: every attribute type (a oneof's
// zero value present, as it must be), events, links, status, parent,
// flags.
func TestEncodeRequest(t *testing.T) {
	exp := &memExporter{}
	tr, p := testProvider(exp)
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	start := time.Unix(1700000000, 123)
	_, sp := tr.Start(ctx, "GET /r/", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("l", "v")}}))
	sp.SetAttributes(
		attribute.String("s", "x\x00y"), attribute.Bool("b", true), attribute.Int("i", -7), attribute.Float64("f", 1.5),
		attribute.StringSlice("ss", []string{"a", "", "c"}), attribute.Int64Slice("is", []int64{1, -2}),
		attribute.BoolSlice("bs", []bool{false, true}), attribute.Float64Slice("fs", []float64{0, 2.5}),
	)
	sp.AddEvent("attempt failed", trace.WithAttributes(attribute.String("error.message", "refused")), trace.WithTimestamp(start.Add(time.Millisecond)))
	sp.SetStatus(codes.Error, "cut short")
	sp.End(trace.WithTimestamp(start.Add(time.Second)))
	_, plain := tr.Start(context.Background(), "plain")
	plain.End()
	p.Shutdown(context.Background())
	if len(exp.spans) != 2 {
		t.Fatalf("%d spans", len(exp.spans))
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeRequest(exp.spans), &req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != 2 {
		t.Fatalf("request %v", &req)
	}
	rs := req.ResourceSpans[0]
	if a := rs.Resource.Attributes; len(a) != 1 || a[0].Key != "service.name" || a[0].Value.GetStringValue() != "sluice" {
		t.Errorf("resource %v", rs.Resource)
	}
	if rs.ScopeSpans[0].Scope.Name != "github.com/sluice-server/sluice" {
		t.Errorf("scope %v", rs.ScopeSpans[0].Scope)
	}
	got := rs.ScopeSpans[0].Spans[0]
	sc := exp.spans[0].SpanContext()
	tid, sid, psid := remote.TraceID(), sc.SpanID(), remote.SpanID()
	want := &tracepb.Span{
		TraceId: tid[:], SpanId: sid[:], ParentSpanId: psid[:],
		Flags: 0x301, Name: "GET /r/", Kind: tracepb.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(start.Add(time.Second).UnixNano()),
		Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "cut short"},
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"trace", got.TraceId, want.TraceId}, {"span", got.SpanId, want.SpanId}, {"parent", got.ParentSpanId, want.ParentSpanId},
		{"flags", got.Flags, want.Flags}, {"name", got.Name, want.Name}, {"kind", got.Kind, want.Kind},
		{"start", got.StartTimeUnixNano, want.StartTimeUnixNano}, {"end", got.EndTimeUnixNano, want.EndTimeUnixNano},
		{"status", got.Status.String(), want.Status.String()},
	} {
		if !equalAny(f.got, f.want) {
			t.Errorf("%s: %v, want %v", f.name, f.got, f.want)
		}
	}
	attrs := map[string]string{}
	for _, kv := range got.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	for k, v := range map[string]string{
		"s": `string_value:"x\x00y"`, "b": `bool_value:true`, "i": `int_value:-7`, "f": `double_value:1.5`,
		"ss": `array_value:{values:{string_value:"a"} values:{string_value:""} values:{string_value:"c"}}`,
		"is": `array_value:{values:{int_value:1} values:{int_value:-2}}`,
		"bs": `array_value:{values:{bool_value:false} values:{bool_value:true}}`,
		"fs": `array_value:{values:{double_value:0} values:{double_value:2.5}}`,
	} {
		if normalize(attrs[k]) != normalize(v) {
			t.Errorf("attribute %s: %s, want %s", k, attrs[k], v)
		}
	}
	if len(got.Events) != 1 || got.Events[0].Name != "attempt failed" || got.Events[0].Attributes[0].Value.GetStringValue() != "refused" ||
		got.Events[0].TimeUnixNano != uint64(start.Add(time.Millisecond).UnixNano()) {
		t.Errorf("events %v", got.Events)
	}
	if len(got.Links) != 1 || !equalAny(got.Links[0].SpanId, psid[:]) || got.Links[0].Flags != 0x301 || got.Links[0].Attributes[0].Key != "l" {
		t.Errorf("links %v", got.Links)
	}
	if p := rs.ScopeSpans[0].Spans[1]; p.Name != "plain" || p.ParentSpanId != nil || p.Flags != 0x101 || p.Status != nil {
		t.Errorf("plain span %v", p)
	}
}

func equalAny(a, b any) bool {
	if x, ok := a.([]byte); ok {
		return string(x) == string(b.([]byte))
	}
	return a == b
}

// normalize drops the spaces prototext puts at random.
func normalize(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			out = append(out, s[i])
		}
	}
	return string(out)
}
