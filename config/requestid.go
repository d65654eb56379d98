package config

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/requestid"
)

// requestIDExample is the shape of a request_id map, for messages.
const requestIDExample = "request_id: {header: X-Request-Id, trusted_proxies: [10.0.0.0/8], response: true}"

// requestID reads the request_id key: false (no IDs), true (the
// defaults) or a map of requestid.Options.
func (p *parser) requestID(n *yaml.Node) {
	d := deref(n)
	var o requestid.Options
	if d.Kind == yaml.ScalarNode && !quoted(d) && d.Tag == "!!bool" {
		if !p.boolean(d, "request_id") {
			p.cfg.RequestID = nil
			return
		}
	} else if d.Kind != yaml.MappingNode {
		p.errorf(n, "request_id: want true, false or a map, e.g. %s", requestIDExample)
		return
	} else {
		if _, ok := p.mapping(d, "request_id key", requestid.Keys); !ok {
			return
		}
		if !p.value(d, reflect.ValueOf(&o).Elem(), "request_id") {
			return
		}
	}
	s, err := requestid.New(o)
	if err != nil {
		p.errorf(n, "request_id: %v", err)
		return
	}
	p.cfg.RequestID = s
}

// explainRequestID describes request_id for Explain: "" for the default
// (IDs made, none kept, none sent back), which every file has unless it
// says otherwise.
func (c *Config) explainRequestID() string {
	if c.RequestID == nil {
		return "off"
	}
	if c.RequestID == defaultRequestID {
		return ""
	}
	o := c.RequestID.Options()
	s := "under " + o.Header
	if len(o.TrustedProxies) > 0 {
		s += ", kept from " + strings.Join(o.TrustedProxies, ", ")
	}
	if o.Response {
		s += ", sent back"
	}
	return s
}
