package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-server/sluice/httpgrammar"
)

// Defaults of Options.
const (
	DefaultService   = "sluice"
	DefaultQueue     = 2048
	DefaultBatchWait = 5 * time.Second
	// DefaultPath is the path of the OTLP/HTTP traces endpoint, added to
	// an Endpoint without one.
	DefaultPath = "/v1/traces"
)

// Options configures New. Endpoint is required; the zero value of every
// other field is its default.
type Options struct {
	// Endpoint is the OTLP/HTTP collector's URL, http or https:
	// http://127.0.0.1:4318 (DefaultPath is added when the URL has no
	// path).
	Endpoint string `yaml:"endpoint"`

	// Sample is the fraction of traces started here that are recorded
	// and exported, from 0 to 1, chosen by trace ID so that every server
	// sampling a trace by ratio agrees. Nil means 1: every request.
	Sample *float64 `yaml:"sample"`

	// HonorParent follows the sampled flag of a received traceparent
	// instead of Sample: a request whose caller records its trace is
	// recorded, one whose caller does not is not. Off by default, since
	// a client could otherwise choose to have every request recorded;
	// turn it on behind a proxy or a caller that traces.
	HonorParent bool `yaml:"honor_parent"`

	// Service is the service.name the spans are reported under; ""
	// means DefaultService.
	Service string `yaml:"service"`

	// Headers are sent with every export (an API key, say).
	Headers map[string]string `yaml:"headers"`

	// Queue bounds the spans waiting for export; past it spans are
	// dropped. 0 means DefaultQueue.
	Queue int `yaml:"queue"`

	// BatchWait is the longest a span waits before its batch is sent; 0
	// means DefaultBatchWait.
	BatchWait time.Duration `yaml:"batch_wait"`

	// Logger receives the failures to export; nil is slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// Keys are the keys of Options, as a config file writes them.
var Keys = []string{"endpoint", "sample", "honor_parent", "service", "headers", "queue", "batch_wait"}

// Tracer starts the spans of requests, for the stages and hooks of this
// package; package tracing/otlp makes one that exports them. It is safe
// for concurrent use; Shutdown ends it.
type Tracer struct {
	tracer   trace.Tracer
	shutdown func(context.Context) error
	opts     Options
}

// NewTracer returns a Tracer starting its spans with tracer, made with
// opts (checked), whose Shutdown calls shutdown (nil: nothing to do).
// Package tracing/otlp's New is the usual way to one.
func NewTracer(tracer trace.Tracer, opts Options, shutdown func(context.Context) error) *Tracer {
	return &Tracer{tracer: tracer, shutdown: shutdown, opts: opts}
}

// Check fills o's defaults in and checks it, returning the endpoint's URL
// with its path. Its errors name the option as a config file does.
func (o *Options) Check() (string, error) {
	if o.Endpoint == "" {
		return "", errors.New("endpoint: want the OTLP/HTTP collector's URL, e.g. http://127.0.0.1:4318")
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("endpoint: %q is not an http or https URL of a collector, e.g. http://127.0.0.1:4318", o.Endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = DefaultPath
	}
	if o.Sample == nil {
		one := 1.0
		o.Sample = &one
	}
	if s := *o.Sample; !(s >= 0 && s <= 1) {
		return "", fmt.Errorf("sample: want a fraction from 0 to 1 (0.1 records one trace in ten), got %v", s)
	}
	if o.Service == "" {
		o.Service = DefaultService
	}
	for _, k := range slices.Sorted(maps.Keys(o.Headers)) {
		if !httpgrammar.IsToken(k) || strings.ContainsAny(o.Headers[k], "\r\n\x00") {
			return "", fmt.Errorf("headers: %q: want a header name and a value on one line", k)
		}
	}
	switch {
	case o.Queue < 0:
		return "", fmt.Errorf("queue: want a number of spans, at least 1, got %d", o.Queue)
	case o.Queue == 0:
		o.Queue = DefaultQueue
	}
	switch {
	case o.BatchWait < 0:
		return "", fmt.Errorf("batch_wait: want a positive duration (e.g. 5s), got %v", o.BatchWait)
	case o.BatchWait == 0:
		o.BatchWait = DefaultBatchWait
	}
	return u.String(), nil
}

// Options returns the options the Tracer was made with, defaults filled
// in.
func (t *Tracer) Options() Options { return t.opts }

// Shutdown sends the spans still queued and stops the Tracer, giving up
// when ctx ends. Spans started after it are not exported.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}
