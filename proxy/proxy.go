package proxy

import (
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/metrics"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// Proxy is a reverse proxy: a pipeline Source that sends each request to
// an upstream and produces the upstream's response, so that the filters
// after it (compress, headers, log) act on it. It is safe for concurrent
// use; Close releases its idle connections.
type Proxy struct {
	grp         *upstream.Group[*upConn] // the upstreams, their pools, balancing, queue and health
	bal         *upstream.Balancer
	resolver    *clientaddr.Resolver
	retries     int
	connectTO   time.Duration
	headerTO    time.Duration
	tunnelIdle  time.Duration
	stripPrefix string
	host        string
	forwarded   string
	maxHead     int
	maxFields   int
	log         *slog.Logger
	passive     PassiveHealth
	health      Health
	failStatus  []int
	queue       *upstream.Queue[*upConn] // grp's: nil without MaxConns or with Queue -1
	transport   string                   // Options.Transport, resolved
	tlsBase     *tls.Config              // for https and h2: what each host's (hostExt.tls) is made from
	tlsOpts     TLSOptions
	h2          *h2Transport      // for h2c and h2; nil for HTTP/1.1
	upm         metrics.Upstreams // each host's counters, by name

	// tunnelReadOn, if set (by tests, before the first request), is
	// called from a tunnel's relay each time its read from src outlives
	// its idle deadline and goes on because the other way is busy.
	tunnelReadOn func(src net.Conn)
}

var _ pipe.Component = (*Proxy)(nil)

// UpstreamSet returns the name p's upstreams are registered under as a
// live set (Options.Name; see upstream.LookupSet), or "" if none.
func (p *Proxy) UpstreamSet() string {
	if s := p.grp.Live(); s != nil {
		return s.Name()
	}
	return ""
}

// Close stops the active health checks and closes the idle upstream
// connections. Requests in flight finish; their connections are closed
// rather than kept. The upstreams' health is kept for another Proxy
// naming them (the next config's, after a reload).
func (p *Proxy) Close() error {
	if p.h2 != nil {
		p.h2.close()
	}
	p.grp.Close()
	return nil
}

// Handle sets the proxy's content on c: the exchange with the upstream
// happens in the content phase, so that every component of the pipeline
// has run first and nothing is sent upstream for a request they refuse.
func (p *Proxy) Handle(c *pipe.Conn) bool {
	x := exchangePool.Get().(*exchange)
	x.p, x.c = p, c
	c.SetContent(x.content)
	return true
}

// exchange is one request's dealings with an upstream.
type exchange struct {
	head    responseHead
	body    bodyReader
	reqHead []byte
	scratch []byte
	// readBuf is a read buffer (readBufSize) lent to the exchange's
	// upstream connection, which comes from its pool without one, and
	// taken back when the response ends: one buffer a request, without
	// a trip through readBufs.
	readBuf []byte
	peer    peerCache
	fields  []string // the response fields passed on: name, value, …
	interim bool     // an interim response was passed on to the client
	text    []byte   // the bytes of the fields not kept from the response before, made one string
	ends    []int    // where each name and value ends in text; -1 for one kept

	p       *Proxy
	c       *pipe.Conn
	content pipe.Content // x.serve, bound once
}

// exchangePool holds exchanges between requests (New is set by init: an
// exchange's content puts it back).
var exchangePool sync.Pool

func init() {
	exchangePool.New = func() any {
		x := &exchange{reqHead: make([]byte, 0, 4<<10), scratch: make([]byte, 32<<10)}
		x.content = x.serve
		return x
	}
}

// serve is the request's content: the exchange with an upstream. The
// exchange goes back to the pool after it (one whose content never runs,
// because a later pipe ended the pipeline, is left to the collector).
func (x *exchange) serve(w pipe.Writer) error {
	p, c := x.p, x.c
	defer func() {
		x.p, x.c = nil, nil
		exchangePool.Put(x)
	}()
	return p.serve(c, w, x)
}
