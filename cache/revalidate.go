package cache

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/conditional"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// Results of a revalidation.
const (
	resFull        = iota // a new response, to serve (stored if it may be)
	resRevalidated        // a 304: the stored response is fresh again
	resError              // a 5xx, or no response at all
	resMismatch           // a 304 whose strong ETag is not the stored response's
)

// fetch runs the rest of the pipeline on a request of the cache's own (a
// revalidation), as engine.ResponseWriter to it: the response's header
// is judged in the fetch's goroutine, and its body grows in e, which
// the waiting client reads as it streams in.
type fetch struct {
	x       *Cache
	h       engine.Header
	status  int
	started bool
	req     *engine.Request
	reqID   slog.Attr // the request that started it, for log lines
	ri      reqInfo
	reqTime time.Time
	pk      string
	old     *entry // the stored response being revalidated
	oldMeta *meta
	e       *entry // the new response
	m       *meta  // the new response's meta when it is stored
	sk      string
	result  int
	fresh   *meta // resRevalidated: the stored response freshened
	length  int64
	onDone  func()       // called last on the fetch's goroutine, if set
	joined  atomic.Int32 // requests that share it besides the first
	own     bool         // resRevalidated: fresh is for the request that sent it only
	// replaced: the new response was stored in old's place (set on the
	// fetch's goroutine before onDone).
	replaced bool
}

// Header implements engine.ResponseWriter.
func (f *fetch) Header() *engine.Header { return &f.h }

// WriteHeader implements engine.ResponseWriter; interim responses are
// dropped.
func (f *fetch) WriteHeader(code int) {
	if f.started || code < 200 {
		return
	}
	f.status = code
	f.start()
}

// Write implements engine.ResponseWriter.
func (f *fetch) Write(p []byte) (int, error) {
	f.start()
	f.e.body.append(p)
	return len(p), nil
}

// WriteString implements engine.ResponseWriter.
func (f *fetch) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

// Flush implements engine.ResponseWriter.
func (f *fetch) Flush() error {
	f.start()
	return nil
}

// start judges the response once its header is final and publishes it.
func (f *fetch) start() {
	if f.started {
		return
	}
	f.started = true
	if f.status == 0 {
		f.status = http.StatusOK
	}
	x := f.x
	now := x.now()
	switch {
	case f.status == http.StatusNotModified && f.oldMeta != nil && !sameStrongETag(f.h.Get("ETag"), f.oldMeta.val.ETag):
		// It selects no stored response for update (§4.3.4): the stored
		// one is out of date, and the request goes on without it.
		f.result = resMismatch
		x.invalidate(f.pk)
	case f.status == http.StatusNotModified && f.oldMeta != nil:
		f.result = resRevalidated
		f.fresh = x.freshen(f.oldMeta, &f.h, f.reqTime, now)
		if f.own = x.ownAnswer(f.fresh); !f.own {
			f.old.meta.Store(f.fresh)
			x.diskFreshen(f.old, f.fresh, f.reqID)
		} else if f.fresh.cc.Has(httpgrammar.CCNoStore) || f.fresh.cc.Has(httpgrammar.CCPrivate) && f.fresh.cc.PrivateFields == "" {
			// The origin now says the response must not be stored.
			x.invalidate(f.pk)
		}
		atomic.AddUint64(&x.stats.Revalidated, 1)
	case f.status >= 500:
		f.result = resError
	}
	m, why := x.newMeta(f.status, &f.h, &f.ri, nil, f.reqTime, now)
	if f.result == resMismatch {
		m = nil
	}
	if f.result == resError && x.staleOnError(f.oldMeta, &f.ri, now) {
		// The stale response answers this failure: an error page must
		// not replace it in the store (the next request would get the
		// error as a hit).
		m, why = nil, whyStatus
	}
	if m != nil && f.result != resRevalidated {
		f.m = m
		if m.vary != nil {
			f.sk = secondaryKey(f.req, m.vary)
			f.e.sk = f.sk
		}
	} else if f.result == resFull {
		switch why {
		case whyAuth, whyCookie, whyReqNoStore, whyMethod, whyPartial:
		default:
			// The origin now says this must not be stored (§4.3.3).
			x.invalidate(f.pk)
		}
	}
	if m == nil {
		m = passMeta(f.status, &f.h, now)
	}
	if f.m == nil {
		// Decided: an error, a 304 (the stored response is freshened
		// already) or a response nobody else may have. A request that
		// comes from now on must ask anew, not take this answer, which
		// may be out of date by then (the origin recovered).
		f.old.pending.CompareAndSwap(f, nil)
	}
	f.length = m.length
	if f.m == nil && f.result != resRevalidated {
		// Not stored: its one reader (the request that started the
		// revalidation) lets go of what it has read.
		f.e.body.mu.Lock()
		f.e.body.stream = true
		f.e.body.mu.Unlock()
	}
	f.e.publish(m, x.maxObject, x.arena)
}

// ownAnswer reports whether the stored response m, as a 304 updated it,
// is one for the request that brought the 304 only, and must not be
// stored: its header now says no-store or private, or carries a
// Set-Cookie that the cache does not store.
func (x *Cache) ownAnswer(m *meta) bool {
	if m.cc.Has(httpgrammar.CCNoStore) || m.cc.Has(httpgrammar.CCPrivate) && m.cc.PrivateFields == "" {
		return true
	}
	if x.storeSetCookie {
		return false
	}
	for _, f := range m.fields {
		if strings.EqualFold(f.name, "Set-Cookie") && !listed(m.cc.NoCacheFields, f.name) && !listed(m.cc.PrivateFields, f.name) {
			return true
		}
	}
	return false
}

// sameStrongETag reports whether a 304's ETag etag304 lets it update
// the stored response with ETag stored (RFC 9111 §4.3.4): a strong one
// must be the stored strong ETag; a weak one or none defers to the
// other validators, which the request was sent with.
func sameStrongETag(etag304, stored string) bool {
	if etag304 == "" || strings.HasPrefix(etag304, "W/") {
		return true
	}
	return conditional.MatchETag([]byte(etag304), stored, false)
}

// passMeta is the meta of a response delivered without being stored.
func passMeta(status int, h *engine.Header, now time.Time) *meta {
	m := &meta{status: status, length: h.ContentLength(), date: now, requestTime: now, responseTime: now}
	connection := joinedValues(h, "Connection")
	h.Values(func(name, value string) bool {
		if !httpgrammar.IsHopByHop(name, connection) {
			m.fields = append(m.fields, field{name, value})
		}
		return true
	})
	return m
}

// run serves rest to the fetch and completes the body; it runs on the
// fetch's own goroutine and never panics.
func (f *fetch) run(h engine.Handler) {
	if f.onDone != nil {
		defer f.onDone()
	}
	// The fetch's hold on its body, let go of once it is stored (or not).
	defer f.e.body.unref()
	defer func() {
		v := recover()
		if v != nil && v != http.ErrAbortHandler {
			f.x.logger.Error("cache: revalidation panicked", "panic", v, f.reqID)
		}
		if !f.started {
			f.e.abandon()
			return
		}
		n, _ := f.e.body.state()
		if v != nil || f.length >= 0 && n != f.length && f.status != http.StatusNotModified && f.status != http.StatusNoContent {
			f.e.body.finish(true)
			return
		}
		f.e.body.finish(false)
		if f.m != nil && n <= f.x.maxObject && f.x.insert(f.pk, f.req, f.e, f.m, f.sk) {
			atomic.AddUint64(&f.x.stats.Stored, 1)
			f.replaced = true
		}
	}()
	h.Serve(f, f.req)
	f.start()
}

// revalidation returns the revalidation of the stored response old (with
// meta m) in flight, or sends a conditional request for it down rest on
// a goroutine of its own: concurrent requests for a stale response share
// one revalidation, as misses share one fetch. The request that starts
// it (true) holds the new response's body, and must let go of it. With
// recheck, a stored response that changed since it was judged by m (a
// revalidation that finished in between freshened it) is not
// revalidated again: revalidation returns nil, false, and the caller
// judges the new meta.
func (x *Cache) revalidation(rest pipe.Component, c *pipe.Conn, ri *reqInfo, pk string, old *entry, m *meta, recheck bool) (*fetch, bool) {
	if f := old.pending.Load(); f != nil {
		f.joined.Add(1)
		return f, false
	}
	if recheck && old.meta.Load() != m {
		// A revalidation stores the freshened meta before it clears
		// pending, so seeing pending clear means seeing its meta.
		return nil, false
	}
	now := x.now()
	f := &fetch{x: x, req: conditionalRequest(c.Request, m), reqID: c.RequestIDAttr(), reqTime: now, pk: pk, old: old, oldMeta: m, e: newEntry()}
	// Held by the fetch, and by the request that starts it, which lets
	// go once it is answered.
	f.e.body = f.e.mem.init(-1, x.arena)
	f.e.body.ref()
	f.h.SetContentLength(-1)
	f.ri = reqInfo{auth: ri.auth, cookie: ri.cookie, noStore: ri.noStore, cc: httpgrammar.ParseCacheControl([]byte(nil))}
	f.ri.cc.StaleIfError = ri.cc.StaleIfError
	if !old.pending.CompareAndSwap(nil, f) {
		if g := old.pending.Load(); g != nil {
			g.joined.Add(1)
			return g, false
		}
	}
	x.fetches.Add(1)
	f.onDone = func() {
		// A new response stored in old's place stays old's pending
		// fetch: a request that looked old up before the store changed
		// and comes here after it joins the finished fetch and gets the
		// new response, rather than revalidating what is already
		// replaced. Otherwise old is still the stored response (a 304
		// freshened it, or nothing was stored) and its next
		// revalidation starts anew.
		if !f.replaced {
			old.pending.CompareAndSwap(f, nil)
		}
		x.fetches.Done()
	}
	// The rest runs on a Conn of its own that carries the client's route
	// parameters and values, as the client's own Conn would.
	go f.run(c.Handler(rest))
	return f, true
}

// revalidate answers a request whose stored response m cannot be used
// as it is: it asks the rest of the pipeline with the stored validators
// and serves the stored response freshened by a 304, the stale one when
// the rest fails and staleness is allowed on error, or the new response
// as it streams in. With recheck it reports again, having done nothing,
// when the stored response changed since m judged it (see revalidation).
func (x *Cache) revalidate(c *pipe.Conn, rest pipe.Component, e *entry, m *meta, ri *reqInfo, pk, fwd string, recheck bool) (ok, again bool) {
	f, started := x.revalidation(rest, c, ri, pk, e, m, recheck)
	if f == nil {
		return false, true
	}
	return x.awaitRevalidation(c, rest, e, m, ri, pk, fwd, f, started), false
}

// awaitRevalidation answers the request with the outcome of f, the
// revalidation of e (judged by m) that it started or joined.
func (x *Cache) awaitRevalidation(c *pipe.Conn, rest pipe.Component, e *entry, m *meta, ri *reqInfo, pk, fwd string, f *fetch, started bool) bool {
	if started {
		defer f.e.body.unref()
	}
	var timeout <-chan time.Time
	if !started {
		// Another request's revalidation: wait for its header at most
		// LockTimeout, as for a collapsed miss, then fetch alone.
		timer := time.NewTimer(x.lockTimeout)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-f.e.readyChan():
	case <-timeout:
		x.count(c, outMiss)
		return x.miss(c, rest, ri, pk, pk, nil, fwd, x.now())
	case <-c.Gone():
		// Nobody to answer; the revalidation goes on for the store.
		return c.Error(http.StatusServiceUnavailable, "client gone")
	}
	now := x.now()
	if f.e.abandoned.Load() {
		if x.staleOnError(m, ri, now) {
			x.count(c, outStale)
			return x.serve(c, e, m, ri, now, x.name+"; fwd="+fwd+"; detail=stale-if-error")
		}
		x.count(c, outMiss)
		c.Header().Set("Cache-Status", x.name+"; fwd="+fwd+"; detail=no-response")
		return c.Error(http.StatusBadGateway, "no response")
	}
	switch f.result {
	case resMismatch:
		x.count(c, outMiss)
		return x.miss(c, rest, ri, pk, pk, nil, fwd, now)
	case resRevalidated:
		if f.own && !started {
			// The 304 made the stored response one for its own request
			// only (a Set-Cookie, private): fetch this one's alone.
			x.count(c, outMiss)
			return x.miss(c, rest, ri, pk, pk, nil, fwd, now)
		}
		x.count(c, outRevalidated)
		return x.serve(c, e, f.fresh, ri, now, x.name+"; fwd="+fwd+"; fwd-status=304; ttl="+ttl(f.fresh, now))
	case resError:
		if x.staleOnError(m, ri, now) {
			x.count(c, outStale)
			return x.serve(c, e, m, ri, now, x.name+"; fwd="+fwd+"; fwd-status="+strconv.Itoa(f.status)+"; detail=stale-if-error")
		}
	}
	nm := f.e.meta.Load()
	if !started && (!f.shareable(c.Request, nm) || !f.e.body.ref()) {
		// Another request's revalidation brought a response that only
		// its own request may have, or one already let go of (it left
		// the store): fetch this one's alone.
		x.count(c, outMiss)
		return x.miss(c, rest, ri, pk, pk, nil, fwd, now)
	}
	if !started {
		defer f.e.body.unref()
	}
	x.count(c, outMiss)
	status := x.name + "; fwd=" + fwd + "; fwd-status=" + strconv.Itoa(f.status)
	if f.m != nil {
		status += storedParam(nm) + "; ttl=" + ttl(nm, now)
	}
	return x.serve(c, f.e, nm, ri, now, status)
}

// shareable reports whether the new response nm that another request's
// revalidation brought may answer r too: only a response that is stored
// (anyone could then have it from the store) and that its Vary selects
// for r as for the request that brought it. An unstored response (a
// private answer to an Authorization or a Cookie) goes only to the
// request that triggered the revalidation.
func (f *fetch) shareable(r *engine.Request, nm *meta) bool {
	if f.m == nil || f.e.body.stream {
		return false
	}
	if nm.vary != nil && secondaryKey(r, nm.vary) != f.sk {
		return false
	}
	return encodingAcceptable(r, nm)
}

// background revalidates the stored response m behind a stale answer
// (stale-while-revalidate), one revalidation per entry at a time.
func (x *Cache) background(rest pipe.Component, c *pipe.Conn, e *entry, m *meta, pk string, ri *reqInfo) {
	if f, started := x.revalidation(rest, c, ri, pk, e, m, true); started {
		f.e.body.unref() // nobody reads the new response here
	}
}

// conditionalRequest copies r (its slices outlive the client's request)
// as a GET without a body, its own preconditions and Range replaced by
// the stored response's validators (RFC 9111 §4.3.1).
func conditionalRequest(r *engine.Request, m *meta) *engine.Request {
	n := &engine.Request{
		Method: []byte("GET"), Target: bytes.Clone(r.Target), RawPath: bytes.Clone(r.RawPath), Path: bytes.Clone(r.Path),
		Query: bytes.Clone(r.Query), Host: bytes.Clone(r.Host), ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor,
		Body: strings.NewReader(""), RemoteAddr: r.RemoteAddr, LocalAddr: r.LocalAddr, TLS: r.TLS,
	}
	for _, f := range r.Fields {
		switch {
		case httpgrammar.EqualFold(f.Name, "If-None-Match"), httpgrammar.EqualFold(f.Name, "If-Modified-Since"),
			httpgrammar.EqualFold(f.Name, "If-Match"), httpgrammar.EqualFold(f.Name, "If-Unmodified-Since"),
			httpgrammar.EqualFold(f.Name, "If-Range"), httpgrammar.EqualFold(f.Name, "Range"),
			httpgrammar.EqualFold(f.Name, "Content-Length"), httpgrammar.EqualFold(f.Name, "Transfer-Encoding"):
			continue
		}
		n.Fields = append(n.Fields, engine.Field{Name: bytes.Clone(f.Name), Value: bytes.Clone(f.Value)})
	}
	if m != nil && m.val.ETag != "" {
		n.Fields = append(n.Fields, engine.Field{Name: []byte("If-None-Match"), Value: []byte(m.val.ETag)})
	}
	if m != nil && m.val.LastModified != "" {
		n.Fields = append(n.Fields, engine.Field{Name: []byte("If-Modified-Since"), Value: []byte(m.val.LastModified)})
	}
	return n
}
