package components

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "headers", Kind: KindPipe,
		Example: `headers: {set: {Cache-Control: "max-age=3600"}, remove: [X-Powered-By]}`,
	}, func(o HeadersOptions, _ Context) (pipe.Component, error) { return NewHeaders(o) })
}

// HeadersOptions configures the headers pipe. Field names are matched
// ASCII case-insensitively.
type HeadersOptions struct {
	// Set replaces the response fields of these names with one field each.
	Set map[string]string `yaml:"set"`

	// Add appends a response field per entry, keeping fields already set.
	Add map[string]string `yaml:"add"`

	// Remove deletes every response field of these names.
	Remove []string `yaml:"remove"`

	// RequestSet replaces the request fields of these names (so later
	// components see the new value), adding them when absent. Setting
	// Host also changes the request's host.
	RequestSet map[string]string `yaml:"request_set"`

	// RequestRemove deletes every request field of these names.
	RequestRemove []string `yaml:"request_remove"`

	// RequestAdd appends a request field per entry, after the fields
	// of that name the client sent (which stay), so later components
	// see both: a proxy sends them on as sent, in order. Host cannot be
	// added (a request has one host): set it with RequestSet.
	RequestAdd map[string]string `yaml:"request_add"`
}

// NewHeaders returns the headers Pipe.
//
// Request fields are changed at once, in the setup phase, for the
// components after it, in the order RequestRemove, RequestSet,
// RequestAdd; the engine's Request.Fields slice is edited in place:
// removed fields are dropped from it and set and added fields point at
// byte slices the component owns and shares between requests
// (read-only: a component must not write into Request slices).
//
// Response fields are changed when the response header is final, after
// the source and every earlier component set theirs (it registers a
// Filter that changes no content), so Set and Remove apply to fields a
// source sets as well, including net/http handlers. The order is Remove,
// then Set, then Add. Content-Length and Transfer-Encoding are the
// engine's and cannot be set; removing Date or Server makes the engine
// send its own.
//
// The pipe is immutable and safe for concurrent use.
func NewHeaders(opts HeadersOptions) (pipe.Component, error) {
	hd := &headers{}
	var err error
	if hd.set, err = headersPairs("set", opts.Set, true); err != nil {
		return nil, err
	}
	if hd.add, err = headersPairs("add", opts.Add, true); err != nil {
		return nil, err
	}
	if hd.reqSet, err = headersPairs("request_set", opts.RequestSet, false); err != nil {
		return nil, err
	}
	if hd.reqAdd, err = headersPairs("request_add", opts.RequestAdd, false); err != nil {
		return nil, err
	}
	for _, p := range hd.reqAdd {
		if strings.EqualFold(p.name, "Host") {
			return nil, fmt.Errorf("headers: request_add: a request has one Host: set it with request_set")
		}
		hd.reqAddBytes = append(hd.reqAddBytes, engine.Field{Name: []byte(p.name), Value: []byte(p.value)})
	}
	if hd.remove, err = headersNames("remove", opts.Remove); err != nil {
		return nil, err
	}
	if hd.reqRemove, err = headersNames("request_remove", opts.RequestRemove); err != nil {
		return nil, err
	}
	for _, p := range hd.reqSet {
		hd.reqSetBytes = append(hd.reqSetBytes, engine.Field{Name: []byte(p.name), Value: []byte(p.value)})
	}
	if len(hd.set)+len(hd.add)+len(hd.remove) > 0 {
		hd.respFilter = pipe.Filter(hd.response)
	}
	return pipe.Pipe(hd.handle), nil
}

type headers struct {
	set, add, reqSet, reqAdd []headersPair
	remove, reqRemove        []string
	reqSetBytes, reqAddBytes []engine.Field
	respFilter               pipe.Filter
}

type headersPair struct{ name, value string }

// headersPairs validates a map of fields and orders it by name, so the
// fields are sent in a stable order.
func headersPairs(opt string, m map[string]string, response bool) ([]headersPair, error) {
	var ps []headersPair
	for name, value := range m {
		if err := headersCheckName(opt, name); err != nil {
			return nil, err
		}
		if response && (strings.EqualFold(name, "Content-Length") || strings.EqualFold(name, "Transfer-Encoding")) {
			return nil, fmt.Errorf("headers: %s: %s is set by the server, not by configuration", opt, name)
		}
		if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return nil, fmt.Errorf("headers: %s: value of %s contains control characters", opt, name)
		}
		ps = append(ps, headersPair{name, strings.TrimSpace(value)})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].name < ps[j].name })
	return ps, nil
}

func headersNames(opt string, names []string) ([]string, error) {
	for _, n := range names {
		if err := headersCheckName(opt, n); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// headersCheckName accepts an RFC 9110 token.
func headersCheckName(opt, name string) error {
	if name == "" {
		return fmt.Errorf("headers: %s: empty field name", opt)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return fmt.Errorf("headers: %s: %q is not a valid field name", opt, name)
		}
	}
	return nil
}

func (hd *headers) handle(c *pipe.Conn) bool {
	r := c.Request
	for _, name := range hd.reqRemove {
		r.Fields = headersDelete(r.Fields, name, -1)
	}
	for i := range hd.reqSetBytes {
		f := &hd.reqSetBytes[i]
		name := hd.reqSet[i].name
		at := -1
		for j := range r.Fields {
			if httpgrammar.EqualFold(r.Fields[j].Name, name) {
				at = j
				break
			}
		}
		if at < 0 {
			r.Fields = append(r.Fields, *f)
		} else {
			r.Fields[at].Value = f.Value
			r.Fields = headersDelete(r.Fields, name, at)
		}
		if strings.EqualFold(name, "Host") {
			r.Host = f.Value
		}
	}
	for _, f := range hd.reqAddBytes {
		// After the last field of its name, so that the list of values
		// a field makes (RFC 9110 §5.3) ends with it.
		at := len(r.Fields)
		for j := range r.Fields {
			if httpgrammar.EqualFold(r.Fields[j].Name, f.Name) {
				at = j + 1
			}
		}
		r.Fields = slices.Insert(r.Fields, at, f)
	}
	if hd.respFilter != nil {
		c.AddFilter(hd.respFilter)
	}
	return true
}

// headersDelete removes the fields named name except the one at keep,
// preserving order.
func headersDelete(fs []engine.Field, name string, keep int) []engine.Field {
	out := fs[:0]
	for i, f := range fs {
		if i == keep || !httpgrammar.EqualFold(f.Name, name) {
			out = append(out, f)
		}
	}
	clear(fs[len(out):])
	return out
}

// response edits the final response header.
func (hd *headers) response(c *pipe.Conn) pipe.Wrap {
	h := c.Header()
	for _, name := range hd.remove {
		h.Del(name)
	}
	for _, p := range hd.set {
		h.Set(p.name, p.value)
	}
	for _, p := range hd.add {
		h.Add(p.name, p.value)
	}
	return nil
}
