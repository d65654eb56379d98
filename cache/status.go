package cache

import (
	"strconv"
	"time"
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
