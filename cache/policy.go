package cache

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-server/sluice/conditional"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// field is one stored header field.
type field struct{ name, value string }

// meta is what a stored response is apart from its body: status, header
// fields and the times its freshness is computed from (RFC 9111 §4.2).
// It is never changed once published; a 304 that freshens a response
// (§4.3.4) publishes a new one.
type meta struct {
	status   int
	fields   []field // as stored: no hop-by-hop field, no Age
	length   int64   // the origin's Content-Length, -1 when unknown
	cc       httpgrammar.CacheControl[string]
	encoding string   // Content-Encoding
	vary     []string // the Vary names, lower case, sorted; nil for none

	date         time.Time // the Date field, or the response time
	requestTime  time.Time
	responseTime time.Time
	ageValue     time.Duration // the Age field
	lifetime     time.Duration // freshness lifetime (§4.2.1)
	headerSize   int64
	// val holds the validators: the first ETag and Last-Modified
	// values, and the latter's time (zero when absent or no date),
	// which is parsed only once something needs it (modTime,
	// validators): a response that is stored and never asked for
	// conditionally, or never asked for at all, costs no parse.
	val     conditional.Validators
	modOnce sync.Once
}

// get returns the first stored value of name.
func (m *meta) get(name string) string {
	for _, f := range m.fields {
		if strings.EqualFold(f.name, name) {
			return f.value
		}
	}
	return ""
}

// currentAge is §4.2.3's current_age at now.
func (m *meta) currentAge(now time.Time) time.Duration {
	apparent := max(0, m.responseTime.Sub(m.date))
	corrected := m.ageValue + m.responseTime.Sub(m.requestTime)
	return max(apparent, corrected) + now.Sub(m.responseTime)
}

// noStaleServing reports whether the response forbids serving it stale
// (or unvalidated) in a shared cache (§4.2.4, §5.2.2.2, §5.2.2.4,
// §5.2.2.8, §5.2.2.10).
func (m *meta) noStaleServing() bool {
	return m.cc.Flags&(httpgrammar.CCMustRevalidate|httpgrammar.CCProxyRevalidate) != 0 || m.cc.SMaxage >= 0 || m.mustValidate()
}

// mustValidate reports whether every reuse needs validation: a bare
// no-cache (a qualified one's fields are not stored at all).
func (m *meta) mustValidate() bool {
	return m.cc.Has(httpgrammar.CCNoCache) && m.cc.NoCacheFields == ""
}

// validators are m's, for package conditional.
func (m *meta) validators() *conditional.Validators {
	m.modOnce.Do(m.parseModTime)
	return &m.val
}

// modTime returns the time of m's Last-Modified value: zero when it has
// none, or none that is a date.
func (m *meta) modTime() time.Time {
	m.modOnce.Do(m.parseModTime)
	return m.val.ModTime
}

// parseModTime sets val.ModTime, once (modOnce): after it, m's
// validators are only read.
func (m *meta) parseModTime() {
	if m.val.LastModified != "" {
		m.val.ModTime, _ = httpgrammar.ParseDate(m.val.LastModified)
	}
}

// hasValidator reports whether a conditional request can revalidate m.
func (m *meta) hasValidator() bool { return m.val.ETag != "" || m.val.LastModified != "" }

// heuristicStatus reports whether a status is heuristically cacheable
// (RFC 9110 §15.1).
func heuristicStatus(code int) bool {
	switch code {
	case 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// understoodStatus reports whether the cache understands a status's
// caching requirements, for must-understand (§5.2.2.3).
func understoodStatus(code int) bool {
	switch code {
	case 200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// reqInfo is what the cache reads from a request once.
type reqInfo struct {
	cc       httpgrammar.CacheControl[[]byte]
	noCache  bool // no-cache, or HTTP/1.0 Pragma: no-cache without Cache-Control
	noStore  bool
	auth     bool // Authorization
	cookie   bool // a Cookie field the key does not cover
	head     bool
	ranged   bool
	received time.Time
}

func readRequest(r *engine.Request) reqInfo {
	ri := reqInfo{head: r.IsMethod("HEAD")}
	if v := r.HeaderList("Cache-Control"); v != nil {
		ri.cc = httpgrammar.ParseCacheControl(v)
		ri.noCache = ri.cc.Has(httpgrammar.CCNoCache)
		ri.noStore = ri.cc.Has(httpgrammar.CCNoStore)
	} else {
		ri.cc = httpgrammar.ParseCacheControl([]byte(nil))
		if p := r.HeaderList("Pragma"); p != nil && httpgrammar.HasToken(p, "no-cache") {
			ri.noCache = true
		}
	}
	ri.auth = r.Header("Authorization") != nil
	ri.ranged = r.Header("Range") != nil
	return ri
}

// newMetaFor returns a meta with room for n fields, made in one
// allocation where that comes to at most 512 bytes (n at most 5), and
// in two, the meta and its fields, where it would not. The rooms fill the
// allocator's size classes, so that a stored response's meta takes no
// more memory than its fields need, nor a further allocation to grow
// them. Past 512 bytes the garbage collector scans an object with
// pointers by itself, where it scans smaller ones a span at a time: a
// store full of 4 KB responses with nine fields each (65,536 metas) took
// 36 ms a collection with each meta in one 640-byte object, 21 ms with
// it in two (a 352-byte meta, 288 bytes of fields).
func newMetaFor(n int) *meta {
	switch {
	case n <= 4:
		return metaWithRoom(func(r *[4]field) []field { return r[:0] })
	case n <= 5:
		return metaWithRoom(func(r *[5]field) []field { return r[:0] })
	}
	return &meta{fields: make([]field, 0, n)}
}

// metaWithRoom returns a meta allocated together with a room R for its
// fields, which fields slices (empty, the room's capacity).
func metaWithRoom[R any](fields func(*R) []field) *meta {
	mf := new(struct {
		meta
		room R
	})
	mf.fields = fields(&mf.room)
	return &mf.meta
}

// newMeta takes the response to store from status and h: the fields
// that may be stored (§3.1: no hop-by-hop field, none the Connection
// field names, no Age; §5.2.2.4 and §5.2.2.7: none no-cache or private
// name; none of skip, the fields set before the cache ran), and the
// times. It returns why the response must not be stored, or "".
func (x *Cache) newMeta(status int, h *engine.Header, ri *reqInfo, skip []field, reqTime, respTime time.Time) (*meta, string) {
	if ri.head {
		return nil, whyMethod
	}
	if status < 200 || status == http.StatusNotModified {
		return nil, whyStatus
	}
	if status == http.StatusPartialContent {
		return nil, whyPartial
	}
	ccv, connection, n := controlFields(h)
	m := newMetaFor(n)
	m.status, m.length, m.requestTime, m.responseTime = status, h.ContentLength(), reqTime, respTime
	m.cc = x.parseCacheControl(ccv)
	cc := &m.cc
	if cc.Has(httpgrammar.CCMustUnderstand) {
		if !understoodStatus(status) {
			return nil, whyUnderstand
		}
	} else if cc.Has(httpgrammar.CCNoStore) {
		return nil, whyNoStore
	}
	if ri.noStore {
		return nil, whyReqNoStore
	}
	if cc.Has(httpgrammar.CCPrivate) && cc.PrivateFields == "" {
		return nil, whyPrivate
	}
	explicit := cc.Flags&httpgrammar.CCPublic != 0 || cc.SMaxage >= 0
	if ri.auth && !explicit && !cc.Has(httpgrammar.CCMustRevalidate) {
		return nil, whyAuth
	}
	if ri.cookie && !explicit {
		vary := joinedValues(h, "Vary")
		if !httpgrammar.HasToken(vary, "cookie") {
			return nil, whyCookie
		}
	}
	if m.length > x.maxObject {
		return nil, whyTooLarge
	}
	var expires string
	hasExpires, ageSeen := false, false
	lists := cc.NoCacheFields != "" || cc.PrivateFields != ""
	ok := true
	h.Values(func(name, value string) bool {
		if httpgrammar.IsHopByHop(name, connection) {
			return true
		}
		switch fieldKind(name) {
		case fieldAge:
			if !ageSeen {
				ageSeen = true
				m.ageValue = parseAge(value)
			}
			return true
		case fieldSetCookie:
			if listed(cc.NoCacheFields, name) || listed(cc.PrivateFields, name) {
				// Stored without it (§5.2.2.4, §5.2.2.7).
				return true
			}
			if !x.storeSetCookie {
				ok = false
				return false
			}
		case fieldCacheStatus:
			// An upstream cache's status is kept; this cache adds its own.
		case fieldDate:
			if m.date.IsZero() {
				if t, good := x.parseDate(value); good {
					m.date = t
				}
			}
		case fieldExpires:
			if !hasExpires {
				expires, hasExpires = value, true
			}
		case fieldETag:
			if m.val.ETag == "" {
				m.val.ETag = value
			}
		case fieldLastModified:
			if m.val.LastModified == "" {
				m.val.LastModified = value
			}
		case fieldContentEncoding:
			m.encoding = value
		case fieldVary:
			names, star := varyNames(value)
			if star {
				ok = false
				return false
			}
			m.vary = append(m.vary, names...)
		}
		if lists && (listed(cc.NoCacheFields, name) || listed(cc.PrivateFields, name)) {
			return true
		}
		for _, s := range skip {
			if s.name == name && s.value == value {
				return true
			}
		}
		m.fields = append(m.fields, field{name, value})
		m.headerSize += int64(len(name) + len(value) + 4)
		return true
	})
	if !ok {
		if h.Get("Set-Cookie") != "" && !x.storeSetCookie {
			return nil, whySetCookie
		}
		return nil, whyVaryStar
	}
	if len(m.vary) > 1 {
		slices.Sort(m.vary)
		m.vary = slices.Compact(m.vary)
	}
	if m.headerSize > x.maxHeader {
		return nil, whyHeaderSize
	}
	if m.date.IsZero() {
		m.date = respTime
		m.fields = append(m.fields, field{"Date", x.httpDate(respTime)})
	}
	// Freshness lifetime, §4.2.1, shared cache.
	heuristic := false
	switch {
	case cc.SMaxage >= 0:
		m.lifetime = time.Duration(cc.SMaxage) * time.Second
	case cc.MaxAge >= 0:
		m.lifetime = time.Duration(cc.MaxAge) * time.Second
	case hasExpires:
		if t, good := parseExpires(expires); good {
			m.lifetime = max(0, t.Sub(m.date))
		}
	case heuristicStatus(status) || cc.Has(httpgrammar.CCPublic):
		heuristic = true
		if lm := m.modTime(); !lm.IsZero() && m.date.After(lm) {
			m.lifetime = min(time.Duration(float64(m.date.Sub(lm))*x.heuristicFraction), x.heuristicMax)
		}
	}
	explicitFresh := cc.SMaxage >= 0 || cc.MaxAge >= 0 || hasExpires
	if !explicitFresh && !heuristic {
		return nil, whyNoFreshness
	}
	// A response stale on arrival that nothing can revalidate or serve
	// stale is no use stored.
	if m.lifetime <= m.currentAge(respTime) && !m.hasValidator() && cc.StaleWhileRevalidate <= 0 && cc.StaleIfError <= 0 && x.staleIfError <= 0 {
		return nil, whyNoFreshness
	}
	return m, ""
}

// The response fields newMeta reads, by fieldKind.
const (
	fieldOther = iota
	fieldAge
	fieldSetCookie
	fieldCacheStatus
	fieldDate
	fieldExpires
	fieldETag
	fieldLastModified
	fieldContentEncoding
	fieldVary
)

// fieldKind tells which of the fields newMeta reads name is, by its
// length first: most names have none of their lengths.
func fieldKind(name string) int {
	switch len(name) {
	case len("Age"):
		if httpgrammar.EqualFold(name, "Age") {
			return fieldAge
		}
	case len("Date"):
		switch {
		case httpgrammar.EqualFold(name, "Date"):
			return fieldDate
		case httpgrammar.EqualFold(name, "ETag"):
			return fieldETag
		case httpgrammar.EqualFold(name, "Vary"):
			return fieldVary
		}
	case len("Expires"):
		if httpgrammar.EqualFold(name, "Expires") {
			return fieldExpires
		}
	case len("Set-Cookie"):
		if httpgrammar.EqualFold(name, "Set-Cookie") {
			return fieldSetCookie
		}
	case len("Cache-Status"):
		if httpgrammar.EqualFold(name, "Cache-Status") {
			return fieldCacheStatus
		}
	case len("Last-Modified"):
		if httpgrammar.EqualFold(name, "Last-Modified") {
			return fieldLastModified
		}
	case len("Content-Encoding"):
		if httpgrammar.EqualFold(name, "Content-Encoding") {
			return fieldContentEncoding
		}
	}
	return fieldOther
}

// joinedValues returns every value of name in h joined by ", ".
func joinedValues(h *engine.Header, name string) string {
	var out string
	n := 0
	h.Values(func(k, v string) bool {
		if strings.EqualFold(k, name) {
			if n == 0 {
				out = v
			} else {
				out += ", " + v
			}
			n++
		}
		return true
	})
	return out
}

// listed reports whether the field list names name.
func listed(list, name string) bool {
	return list != "" && httpgrammar.HasToken(list, strings.ToLower(name))
}

// freshen returns the stored response m updated by a 304 (or a HEAD's
// 200) per §3.2 and §4.3.4: each field of the new response replaces the
// stored fields of its name, but Content-Length, the hop-by-hop fields
// and those the stored body depends on (Content-Encoding,
// Content-Range); the times are the new exchange's.
func (x *Cache) freshen(m *meta, h *engine.Header, reqTime, respTime time.Time) *meta {
	n := &meta{status: m.status, length: m.length, encoding: m.encoding, vary: m.vary}
	var repl []field
	connection := joinedValues(h, "Connection")
	h.Values(func(name, value string) bool {
		switch {
		case httpgrammar.IsHopByHop(name, connection), strings.EqualFold(name, "Content-Encoding"),
			strings.EqualFold(name, "Content-Range"), strings.EqualFold(name, "Age"),
			strings.EqualFold(name, "Cache-Status"):
			return true
		}
		repl = append(repl, field{name, value})
		return true
	})
	for _, f := range m.fields {
		if !hasField(repl, f.name) {
			n.fields = append(n.fields, f)
		}
	}
	n.fields = append(n.fields, repl...)
	n.val, n.date, n.ageValue = conditional.Validators{}, time.Time{}, 0
	n.requestTime, n.responseTime = reqTime, respTime
	if v := h.Get("Age"); v != "" {
		n.ageValue = parseAge(v)
	}
	n.headerSize = 0
	hasExpires := false
	var expires string
	ccs, cdns := "", ""
	for _, f := range n.fields {
		n.headerSize += int64(len(f.name) + len(f.value) + 4)
		switch {
		case strings.EqualFold(f.name, "Cache-Control"):
			if ccs != "" {
				ccs += ", "
			}
			ccs += f.value
		case strings.EqualFold(f.name, "CDN-Cache-Control"):
			if cdns != "" {
				cdns += ", "
			}
			cdns += f.value
		case strings.EqualFold(f.name, "Date"):
			if t, ok := httpgrammar.ParseDate(f.value); ok && n.date.IsZero() {
				n.date = t
			}
		case strings.EqualFold(f.name, "Expires"):
			if !hasExpires {
				expires, hasExpires = f.value, true
			}
		case strings.EqualFold(f.name, "ETag"):
			if n.val.ETag == "" {
				n.val.ETag = f.value
			}
		case strings.EqualFold(f.name, "Last-Modified"):
			if n.val.LastModified == "" {
				n.val.LastModified = f.value
			}
		}
	}
	if n.date.IsZero() || h.Get("Date") == "" {
		n.date = respTime
		n.fields = replaceField(n.fields, "Date", x.httpDate(respTime))
	}
	if validCDN(cdns) {
		ccs = cdns
	}
	n.cc = httpgrammar.ParseCacheControl(ccs)
	switch {
	case n.cc.SMaxage >= 0:
		n.lifetime = time.Duration(n.cc.SMaxage) * time.Second
	case n.cc.MaxAge >= 0:
		n.lifetime = time.Duration(n.cc.MaxAge) * time.Second
	case hasExpires:
		n.lifetime = 0
		if t, ok := parseExpires(expires); ok {
			n.lifetime = max(0, t.Sub(n.date))
		}
	default:
		n.lifetime = 0
		if lm := n.modTime(); !lm.IsZero() && n.date.After(lm) && (heuristicStatus(n.status) || n.cc.Has(httpgrammar.CCPublic)) {
			n.lifetime = min(time.Duration(float64(n.date.Sub(lm))*x.heuristicFraction), x.heuristicMax)
		}
	}
	return n
}

func hasField(fs []field, name string) bool {
	for _, f := range fs {
		if strings.EqualFold(f.name, name) {
			return true
		}
	}
	return false
}

func replaceField(fs []field, name, value string) []field {
	out := fs[:0]
	for _, f := range fs {
		if !strings.EqualFold(f.name, name) {
			out = append(out, f)
		}
	}
	return append(out, field{name, value})
}

// parseAge reads an Age value (RFC 9111 §5.1): the first element of the
// list, delta-seconds; anything else counts as no Age.
func parseAge(v string) time.Duration {
	elem, _ := httpgrammar.NextElement(v)
	if elem == "" {
		return 0
	}
	for i := 0; i < len(elem); i++ {
		if elem[i] < '0' || elem[i] > '9' {
			return 0
		}
	}
	n, err := strconv.ParseInt(elem, 10, 64)
	if err != nil {
		n = httpgrammar.DeltaInfinity
	}
	return time.Duration(min(n, httpgrammar.DeltaInfinity)) * time.Second
}

// controlFields returns the directives the cache follows for a response:
// those of CDN-Cache-Control when the response has that field and it is
// valid (RFC 9213: a cache that honours it ignores Cache-Control), else
// Cache-Control's, the field lines joined.
// It returns the Connection field's lines joined too, and the most
// fields the response can be stored with (its fields, and a Date when it
// has none), all in one pass over h.
func controlFields(h *engine.Header) (cc, connection string, fields int) {
	var cdn string
	date := false
	h.Values(func(name, value string) bool {
		fields++
		switch len(name) {
		case len("Date"):
			date = date || strings.EqualFold(name, "Date")
		case len("Cache-Control"):
			if strings.EqualFold(name, "Cache-Control") {
				cc = joinValue(cc, value)
			}
		case len("CDN-Cache-Control"):
			if strings.EqualFold(name, "CDN-Cache-Control") {
				cdn = joinValue(cdn, value)
			}
		case len("Connection"):
			if strings.EqualFold(name, "Connection") {
				connection = joinValue(connection, value)
			}
		}
		return true
	})
	if cdn != "" && validCDN(cdn) {
		cc = cdn
	}
	if !date {
		fields++
	}
	return cc, connection, fields
}

func joinValue(list, v string) string {
	if list == "" {
		return v
	}
	return list + ", " + v
}

// parseExpires reads an Expires value: an HTTP-date, or one whose names
// (weekday, month, GMT) are in another case, which senders get wrong and
// which means the same date. Anything else is invalid: a time in the
// past (RFC 9111 §5.3).
func parseExpires(v string) (time.Time, bool) {
	if t, ok := httpgrammar.ParseDate(v); ok {
		return t, true
	}
	b := []byte(v)
	start := true
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			c |= 0x20 // lower
			if start {
				c &^= 0x20 // upper
			}
			b[i], start = c, false
		default:
			start = true
		}
	}
	s := strings.Replace(string(b), "Gmt", "GMT", 1)
	return httpgrammar.ParseDate(s)
}
