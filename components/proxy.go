package components

import (
	"fmt"

	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
)

func init() {
	Register(Registration{
		Name: "proxy", Kind: KindSource, Scalar: "upstreams", Paths: []string{"tls.ca", "tls.cert", "tls.key"},
		Example: `proxy: {upstreams: [http://10.0.0.1:8080, http://10.0.0.2:8080], policy: least_conn}`,
	}, func(o ProxyOptions, x Context) (pipe.Component, error) {
		if err := setName(&o.Name, x); err != nil {
			return nil, err
		}
		return NewProxy(o)
	})
}

// setName checks an upstream set's name option, a token (an explicit
// name never takes a name derived from the config, which has a / or a
// space), or, absent, sets it to the entry's place in the config (see
// Context.Place).
func setName(name *string, x Context) error {
	switch {
	case *name == "":
		*name = x.Place
	case !httpgrammar.IsToken(*name):
		return fmt.Errorf("name %q: want a token of letters, digits and - _ . (such as api or php-pool)", *name)
	}
	return nil
}

// ProxyOptions configures the proxy source: the options of package
// proxy, which a config file sets by their yaml keys. The scalar or list
// form `proxy: http://127.0.0.1:9000` sets Upstreams.
type ProxyOptions struct {
	proxy.Options `yaml:",inline"`
}

// NewProxy returns the proxy source, a *proxy.Proxy: a Source that sends
// each request to one of its upstreams (http URLs or unix: socket
// paths), chosen by policy, over keep-alive connections, and
// produces the upstream's response, so that filters after it (compress,
// headers, log) act on it. Upstream responses with ambiguous or
// malformed framing are answered 502, never passed on, and bytes an
// upstream sends past a response (or unasked, on an idle connection)
// are never taken for another: the connection is closed. An unreachable
// upstream is answered 502, a timeout 504. At max_conns requests wait in a bounded
// queue, and get 503 past it. Both
// bodies are streamed, flushes passed on at once; WebSocket (any
// Upgrade but h2c) is tunnelled byte for byte after the upstream's 101 (which
// must name in Upgrade a protocol the client asked for, or gets 502),
// until tunnel_idle_timeout of silence. Failing
// upstreams (with fail_status, those answering such statuses too) are
// left out for a while (passive checks), and with health.path set
// checked actively; health is each process's own. Hop-by-hop fields are
// dropped both ways; X-Forwarded-For/-Proto/-Host (or RFC 7239
// Forwarded) are appended to only past trusted_proxies, other proxies'
// fields (X-Real-IP, X-Forwarded-Port, X-Original-URL…) pass only from
// them, and all these names spelt with underscores are dropped; Via is
// added.
// See package proxy for the rules in full.
//
// transport https (https:// upstreams) speaks HTTP/1.1 over TLS,
// verified by default (tls: ca, cert, key, server_name); h2c and h2 speak
// HTTP/2, many requests on few connections, with trailers and both bodies
// streaming at once, as gRPC needs. tls.insecure_skip_verify is warned
// about.
//
// It fails for options proxy.New refuses: no upstreams, an upstream not
// http://, https:// or unix:, a transport its upstreams' schemes do not
// fit, an unknown policy or hash_key, a strip_prefix not starting with /.
func NewProxy(opts ProxyOptions) (pipe.Component, error) {
	p, err := proxy.New(opts.Options)
	if err != nil {
		return nil, err
	}
	return p, nil
}
