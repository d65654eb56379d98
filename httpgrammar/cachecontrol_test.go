package httpgrammar

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseCacheControl(t *testing.T) {
	type want struct {
		flags                          CacheFlag
		maxAge, sMaxage, maxStale, min int64
		swr, sie                       int64
		noCache, private               string
	}
	none := want{maxAge: -1, sMaxage: -1, maxStale: -1, min: -1, swr: -1, sie: -1}
	with := func(f func(*want)) want { w := none; f(&w); return w }
	tests := []struct {
		in   string
		want want
	}{
		{"", none},
		{"max-age=60", with(func(w *want) { w.maxAge = 60 })},
		{"MAX-AGE=60", with(func(w *want) { w.maxAge = 60 })},
		{`max-age="60"`, with(func(w *want) { w.maxAge = 60 })},
		{"max-age=60, max-age=10", with(func(w *want) { w.maxAge = 60 })},
		{"max-age=-1", with(func(w *want) { w.maxAge = 0 })},
		{"max-age=1.5", with(func(w *want) { w.maxAge = 0 })},
		{"max-age=abc", with(func(w *want) { w.maxAge = 0 })},
		{"max-age", with(func(w *want) { w.maxAge = 0 })},
		{"max-age=", with(func(w *want) { w.maxAge = 0 })},
		{"max-age=99999999999999999999", with(func(w *want) { w.maxAge = DeltaInfinity })},
		{"max-age=2147483648", with(func(w *want) { w.maxAge = DeltaInfinity })},
		{"max-age=2147483647", with(func(w *want) { w.maxAge = 2147483647 })},
		{"s-maxage=5, public", with(func(w *want) { w.sMaxage, w.flags = 5, CCPublic })},
		{"no-store,no-cache , private", with(func(w *want) { w.flags = CCNoStore | CCNoCache | CCPrivate })},
		{`no-cache="Set-Cookie, X-A", max-age=3`, with(func(w *want) {
			w.flags, w.noCache, w.maxAge = CCNoCache, "Set-Cookie, X-A", 3
		})},
		{`private="X-User"`, with(func(w *want) { w.flags, w.private = CCPrivate, "X-User" })},
		{`private=X-User`, with(func(w *want) { w.flags, w.private = CCPrivate, "X-User" })},
		// A bare occurrence, before or after a qualified one, means the
		// whole response.
		{`private="x-a", private, max-age=60`, with(func(w *want) { w.flags, w.maxAge = CCPrivate, 60 })},
		{`private, private="x-a"`, with(func(w *want) { w.flags = CCPrivate })},
		{`private=""`, with(func(w *want) { w.flags = CCPrivate })},
		{`no-cache="x-a", no-cache`, with(func(w *want) { w.flags = CCNoCache })},
		{`no-cache, no-cache="x-a"`, with(func(w *want) { w.flags = CCNoCache })},
		{"max-stale", with(func(w *want) { w.maxStale = DeltaInfinity })},
		{"max-stale=30", with(func(w *want) { w.maxStale = 30 })},
		{"min-fresh=10, only-if-cached", with(func(w *want) { w.min, w.flags = 10, CCOnlyIfCached })},
		{"must-revalidate, proxy-revalidate, must-understand, no-transform, immutable", with(func(w *want) {
			w.flags = CCMustRevalidate | CCProxyRevalidate | CCMustUnderstand | CCNoTransform | CCImmutable
		})},
		{"stale-while-revalidate=30, stale-if-error=60", with(func(w *want) { w.swr, w.sie = 30, 60 })},
		// A quoted comma does not split; junk skips only its element.
		{`foo="a, max-age=5", max-age=7`, with(func(w *want) { w.maxAge = 7 })},
		{`max-age=5 junk, no-store`, with(func(w *want) { w.flags = CCNoStore })},
		{`max-age="5, no-store`, none},
		{`,,, ,max-age=1,,`, with(func(w *want) { w.maxAge = 1 })},
		{"unknown, x=y, public", with(func(w *want) { w.flags = CCPublic })},
		{"max-age = 9", with(func(w *want) { w.maxAge = 9 })},
		{"no-cache\t,\tno-store", with(func(w *want) { w.flags = CCNoCache | CCNoStore })},
	}
	for _, tt := range tests {
		cc := ParseCacheControl(tt.in)
		got := want{cc.Flags, cc.MaxAge, cc.SMaxage, cc.MaxStale, cc.MinFresh,
			cc.StaleWhileRevalidate, cc.StaleIfError, cc.NoCacheFields, cc.PrivateFields}
		if got != tt.want {
			t.Errorf("ParseCacheControl(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if b := ParseCacheControl([]byte(tt.in)); b.Flags != cc.Flags || b.MaxAge != cc.MaxAge || string(b.NoCacheFields) != cc.NoCacheFields {
			t.Errorf("ParseCacheControl([]byte(%q)) differs from the string form", tt.in)
		}
	}
}

func TestCacheControlHas(t *testing.T) {
	cc := ParseCacheControl("public, max-age=1")
	if !cc.Has(CCPublic) || cc.Has(CCPublic|CCPrivate) || cc.Has(CCNoStore) {
		t.Errorf("Has on %+v", cc)
	}
}

// formatCC writes cc back as a field value, in a canonical form.
func formatCC(cc CacheControl[[]byte]) string {
	var parts []string
	names := []string{"no-cache", "no-store", "no-transform", "only-if-cached", "must-revalidate",
		"proxy-revalidate", "must-understand", "private", "public", "immutable"}
	for i, n := range names {
		if cc.Flags&(1<<i) == 0 {
			continue
		}
		switch {
		case n == "no-cache" && len(cc.NoCacheFields) > 0:
			n += `="` + string(cc.NoCacheFields) + `"`
		case n == "private" && len(cc.PrivateFields) > 0:
			n += `="` + string(cc.PrivateFields) + `"`
		}
		parts = append(parts, n)
	}
	for _, d := range []struct {
		n string
		v int64
	}{{"max-age", cc.MaxAge}, {"s-maxage", cc.SMaxage}, {"max-stale", cc.MaxStale}, {"min-fresh", cc.MinFresh},
		{"stale-while-revalidate", cc.StaleWhileRevalidate}, {"stale-if-error", cc.StaleIfError}} {
		if d.v >= 0 {
			parts = append(parts, d.n+"="+strconv.FormatInt(d.v, 10))
		}
	}
	return strings.Join(parts, ", ")
}

// The parser never panics, keeps every number in range, and its result
// written back in canonical form parses to the same directives.
func FuzzParseCacheControl(f *testing.F) {
	for _, s := range []string{"max-age=60", `no-cache="a, b", private`, `private="x", private`, "max-stale", "s-maxage=\"1\"",
		"must-revalidate, stale-if-error=5", `x="\"", public`, "max-age=99999999999999"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cc := ParseCacheControl(b)
		for _, v := range []int64{cc.MaxAge, cc.SMaxage, cc.MaxStale, cc.MinFresh, cc.StaleWhileRevalidate, cc.StaleIfError} {
			if v < -1 || v > DeltaInfinity {
				t.Fatalf("ParseCacheControl(%q): %d out of range", b, v)
			}
		}
		again := ParseCacheControl([]byte(formatCC(cc)))
		if formatCC(again) != formatCC(cc) {
			t.Fatalf("ParseCacheControl(%q) = %q, which parses to %q", b, formatCC(cc), formatCC(again))
		}
	})
}
