package config

import (
	"context"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/tracing"
	"github.com/sluice-server/sluice/tracing/otlp"
)

// tracingExample is the shape of a tracing map, for messages.
const tracingExample = "tracing: {endpoint: http://127.0.0.1:4318, sample: 0.1, service: shop}"

// tracingFlush bounds how long closing a config waits for its spans to be
// sent.
const tracingFlush = 5 * time.Second

// tracing reads the tracing key: a map of tracing.Options, which builds
// the Tracer, or false (no tracing, as without the key).
func (p *parser) tracing(n *yaml.Node) {
	d := deref(n)
	if d.Kind == yaml.ScalarNode && !quoted(d) && d.Tag == "!!bool" {
		if p.boolean(d, "tracing") {
			p.errorf(n, "tracing: true needs a collector to send to: write a map, e.g. %s", tracingExample)
		}
		return
	}
	if d.Kind != yaml.MappingNode {
		p.errorf(n, "tracing: want a map, e.g. %s", tracingExample)
		return
	}
	if _, ok := p.mapping(d, "tracing key", tracing.Keys); !ok {
		return
	}
	o := tracing.Options{Logger: p.loader.Context.Logger}
	if !p.value(d, reflect.ValueOf(&o).Elem(), "tracing") {
		return
	}
	t, err := otlp.New(o)
	if err != nil {
		p.errorf(n, "tracing: %v", err)
		return
	}
	p.cfg.Tracer = t
}

// routeLabel is a route's http.route in its spans: its match, or its
// matches joined by commas.
func routeLabel(r *Route) string {
	return strings.Join(r.Match, ",")
}

// closeTracer sends the spans still queued, for at most tracingFlush.
func (c *Config) closeTracer() error {
	if c.Tracer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlush)
	defer cancel()
	return c.Tracer.Shutdown(ctx)
}
