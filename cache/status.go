package cache

import (
	"hash/maphash"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/httpgrammar"
)

// The Cache-Status field (RFC 9211) the cache adds to every answer names
// it (Options.Name) and says what it did: "hit", or "fwd=" and why the
// request went forward (uri-miss, vary-miss, miss, stale, request,
// method), the forwarded response's "fwd-status", "stored", "collapsed",
// "ttl", and "detail" with why a response was not stored.

// Why a response is not stored: Cache-Status detail values.
const (
	whyMethod      = "method"
	whyStatus      = "status"
	whyNoStore     = "no-store"
	whyReqNoStore  = "request-no-store"
	whyPrivate     = "private"
	whyAuth        = "authorization"
	whySetCookie   = "set-cookie"
	whyCookie      = "cookie"
	whyVaryStar    = "vary-star"
	whyTooLarge    = "too-large"
	whyHeaderSize  = "header-too-large"
	whyNoFreshness = "no-freshness"
	whyUnderstand  = "must-understand"
	whyBrokeOff    = "broke-off"
	whyPartial     = "partial"
)

// ttl is Cache-Status's ttl: the seconds of freshness left, negative
// when stale; it adds up with Age (whole seconds) to the lifetime.
func ttl(m *meta, now time.Time) string {
	age := max(0, int64(m.currentAge(now)/time.Second))
	return strconv.FormatInt(int64(m.lifetime/time.Second)-age, 10)
}

// hitStrings are the Age value and the Cache-Status of a fresh hit on a
// stored response at one second of its age: hits within that second
// share them instead of formatting their own.
type hitStrings struct {
	m           *meta
	sec         int64
	age, status string
}

// strings returns the Age and hit Cache-Status of e's response m at now.
func (e *entry) strings(x *Cache, m *meta, now time.Time) *hitStrings {
	sec := max(0, int64(m.currentAge(now)/time.Second))
	if p := e.hit.Load(); p != nil && p.m == m && p.sec == sec {
		return p
	}
	p := &hitStrings{m: m, sec: sec, age: strconv.FormatInt(sec, 10),
		status: x.name + "; hit; ttl=" + strconv.FormatInt(int64(m.lifetime/time.Second)-sec, 10)}
	e.hit.Store(p)
	return p
}

// dateString is an HTTP-date and the Unix second it names.
type dateString struct {
	sec int64
	s   string
}

// httpDate returns t as an HTTP-date (RFC 9110 §5.6.7), the Date a
// response without one is stored with. It formats a second once: the
// misses of that second share the string.
func (x *Cache) httpDate(t time.Time) string {
	sec := t.Unix()
	if d := x.date.Load(); d != nil && d.sec == sec {
		return d.s
	}
	d := &dateString{sec: sec, s: t.UTC().Format(http.TimeFormat)}
	x.date.Store(d)
	return d.s
}

// parsedDate is a Date value and what httpgrammar.ParseDate makes of it.
type parsedDate struct {
	s  string
	t  time.Time
	ok bool
}

// parseDate is httpgrammar.ParseDate for a response's Date value. The
// responses of a second mostly carry the same one: it is parsed once,
// and those after it that repeat it take its time.
func (x *Cache) parseDate(v string) (time.Time, bool) {
	if p := x.lastDate.Load(); p != nil && p.s == v {
		return p.t, p.ok
	}
	t, ok := httpgrammar.ParseDate(v)
	x.lastDate.Store(&parsedDate{v, t, ok})
	return t, ok
}

// parsedCC is a response's Cache-Control value and its directives.
type parsedCC struct {
	s  string
	cc httpgrammar.CacheControl[string]
}

// parseCacheControl is httpgrammar.ParseCacheControl for the directives
// of a response to store. A site's responses mostly come with a few
// values, one after another the same: the last one parsed is kept, and a
// response that repeats it takes its directives. The directives' lists
// (no-cache="…", private="…") are substrings of the value, as a parse of
// it would make them.
func (x *Cache) parseCacheControl(v string) httpgrammar.CacheControl[string] {
	if p := x.lastCC.Load(); p != nil && p.s == v {
		return p.cc
	}
	p := &parsedCC{s: v, cc: httpgrammar.ParseCacheControl(v)}
	x.lastCC.Store(p)
	return p.cc
}

// statusStrings keeps the Cache-Status values of recent misses, so that
// misses that say the same (the same fwd, fwd-status and ttl: a site's
// responses mostly come with a few max-ages) share one string rather
// than each making its own. A slot is chosen by a hash of the value; a
// value that is not in its slot replaces it.
type statusStrings [16]atomic.Pointer[string]

// internSeed seeds the hash that picks a statusStrings slot.
var internSeed = maphash.MakeSeed()

// intern returns b as a string, the one in its slot when that is equal.
func (ss *statusStrings) intern(b []byte) string {
	slot := &ss[maphash.Bytes(internSeed, b)%uint64(len(ss))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

// storedParam is Cache-Status's "; stored" for a response being stored,
// sent with its header, before its body: only when the body's length is
// known (and within MaxObjectSize, or it would not be stored), so that
// nothing but a body that breaks off can belie it. A response of unknown
// length may still be stored: its ttl says it is storable.
func storedParam(m *meta) string {
	if m.length < 0 {
		return ""
	}
	return "; stored"
}
