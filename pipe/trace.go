package pipe

import "context"

// Trace is what a tracer keeps on a request it traces (see SetTrace): the
// request's span, under which the components that do work worth a span
// of their own (a cache lookup, each attempt of a proxy) start theirs.
// Package tracing sets one and reads it back; other code passes it on.
type Trace interface {
	// TraceContext returns a context holding the request's span.
	TraceContext() context.Context
}

// SetTrace records t as the request's trace, replacing any set before;
// nil clears it. It is for the tracer's stage, which runs before the
// router.
func (c *Conn) SetTrace(t Trace) { c.trace = t }

// Trace returns the request's trace, or nil when the request is not
// traced: a component asks with a nil check, which is all tracing costs
// it when tracing is off.
func (c *Conn) Trace() Trace { return c.trace }
