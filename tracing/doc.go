// Package tracing traces requests with OpenTelemetry: a server span per
// request, a child span for a cache's lookup and for each attempt a proxy
// or a FastCGI client makes upstream, with W3C Trace Context
// (traceparent, tracestate) read from the request and passed on upstream,
// the attempt's span as the parent.
//
// A Tracer is made from Options (a config file's tracing section) by
// package tracing/otlp, which records the spans with the OpenTelemetry
// SDK and exports them over OTLP/HTTP; this package needs only
// OpenTelemetry's API, so the components that call its hooks link no SDK.
// A Tracer's Stage, placed before the router, starts the request's server
// span and records it on the pipe.Conn (SetTrace); its Route stage, first
// in each route's pipeline, names the route the span reports. The
// components that do work of their own ask with StartUpstream and
// StartCache, which return nil for a request that is not traced: that nil
// check is all tracing costs them when it is off, and a server without a
// Tracer runs no stage of this package, so it reads no clock and
// allocates nothing for it.
//
// Spans go through a batch processor with a bounded queue (spans past it
// are dropped, never waited for) to the OTLP/HTTP endpoint; Shutdown
// sends what is queued, as a config that is retired (a reload, a stop)
// does when it closes.
package tracing
