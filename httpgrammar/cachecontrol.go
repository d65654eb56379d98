package httpgrammar

// CacheFlag is a Cache-Control directive without an argument (or whose
// argument CacheControl keeps apart), as a bit in CacheControl.Flags.
type CacheFlag uint16

// The directives of RFC 9111 §5.2, RFC 5861 and RFC 8246 that carry no
// number. CCNoCache and CCPrivate are set with or without field names
// (see CacheControl.NoCacheFields and PrivateFields).
const (
	CCNoCache CacheFlag = 1 << iota
	CCNoStore
	CCNoTransform
	CCOnlyIfCached
	CCMustRevalidate
	CCProxyRevalidate
	CCMustUnderstand
	CCPrivate
	CCPublic
	CCImmutable
)

// DeltaInfinity is the largest delta-seconds value CacheControl holds:
// 2^31, which RFC 9111 §1.2.2 says a recipient uses for any greater
// number. It is also MaxStale's value for "max-stale" without an
// argument (any staleness).
const DeltaInfinity = 1 << 31

// CacheControl is a parsed Cache-Control field value (RFC 9111 §5.2),
// for a request or a response: the flags, the delta-seconds of the
// directives that have one, and the field names no-cache and private
// may qualify. The zero value is not "no directives": use
// ParseCacheControl, which sets every number to -1 (absent) first. It
// holds T views into the parsed value, so it is valid as long as that
// value is.
type CacheControl[T ~string | ~[]byte] struct {
	Flags CacheFlag

	// MaxAge, SMaxage, MaxStale, MinFresh, StaleWhileRevalidate and
	// StaleIfError are the directives' delta-seconds, 0 to DeltaInfinity,
	// or -1 when the directive is absent. A directive whose argument is
	// missing or not a delta-seconds counts as 0 (RFC 9111 §4.2.1 lets a
	// cache treat invalid freshness information as stale), but for
	// max-stale, whose argument is optional: alone it means any
	// staleness, DeltaInfinity. The first occurrence of a repeated
	// directive counts. A quoted argument (max-age="60") is accepted, as
	// §5.2 asks of recipients.
	MaxAge, SMaxage, MaxStale, MinFresh int64
	StaleWhileRevalidate, StaleIfError  int64

	// NoCacheFields and PrivateFields are the field-name lists of the
	// qualified forms no-cache="a, b" and private="a", without the
	// quotes; empty for the bare directives, and when a bare occurrence
	// stands anywhere beside a qualified one (it means the whole
	// response). Walk them with NextElement.
	NoCacheFields, PrivateFields T
}

// Has reports whether every flag in f is set.
func (cc *CacheControl[T]) Has(f CacheFlag) bool { return cc.Flags&f == f }

// ParseCacheControl parses a Cache-Control field value, the field lines
// joined by commas as Request.HeaderList joins them. Directive names
// compare under ASCII case folding; unknown directives and malformed
// elements are skipped up to the next comma outside a quoted string, so a
// broken element never hides the ones after it. It allocates nothing.
func ParseCacheControl[T ~string | ~[]byte](v T) CacheControl[T] {
	cc := CacheControl[T]{MaxAge: -1, SMaxage: -1, MaxStale: -1, MinFresh: -1,
		StaleWhileRevalidate: -1, StaleIfError: -1}
	i := 0
	for i < len(v) {
		// Skip separators and whitespace before a directive name.
		for i < len(v) && (v[i] == ',' || v[i] == ' ' || v[i] == '\t') {
			i++
		}
		start := i
		for i < len(v) && IsTokenChar(v[i]) {
			i++
		}
		name := v[start:i]
		for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
		var arg T
		hasArg, good := false, len(name) > 0
		if i < len(v) && v[i] == '=' {
			i++
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
			hasArg = true
			if i < len(v) && v[i] == '"' {
				end, ok := quotedEnd(v, i)
				arg, i = v[i+1:end], end+1
				good = good && ok
			} else {
				s := i
				for i < len(v) && IsTokenChar(v[i]) {
					i++
				}
				arg = v[s:i]
			}
			for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
				i++
			}
		}
		if i < len(v) && v[i] != ',' {
			// Junk after the element: skip to the next comma outside quotes.
			good = false
			for i < len(v) && v[i] != ',' {
				if v[i] == '"' {
					end, _ := quotedEnd(v, i)
					i = end
				}
				i++
			}
		}
		if good {
			cc.set(name, arg, hasArg)
		}
	}
	return cc
}

// quotedEnd returns the index of the closing quote of the quoted string
// opening at v[i], or len(v) and false when it is not closed.
func quotedEnd[T ~string | ~[]byte](v T, i int) (int, bool) {
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			j++
		case '"':
			return j, true
		}
	}
	return len(v), false
}

func (cc *CacheControl[T]) set(name, arg T, hasArg bool) {
	var num *int64
	switch len(name) {
	case 6:
		if EqualFold(name, "public") {
			cc.Flags |= CCPublic
			return
		}
	case 7:
		switch {
		case EqualFold(name, "max-age"):
			num = &cc.MaxAge
		case EqualFold(name, "private"):
			switch {
			case !hasArg:
				// A bare private anywhere means the whole response.
				cc.PrivateFields = arg
			case cc.Flags&CCPrivate == 0:
				cc.PrivateFields = arg
			}
			cc.Flags |= CCPrivate
			return
		}
	case 8:
		switch {
		case EqualFold(name, "no-cache"):
			switch {
			case !hasArg:
				// A bare no-cache anywhere means the whole response.
				cc.NoCacheFields = arg
			case cc.Flags&CCNoCache == 0:
				cc.NoCacheFields = arg
			}
			cc.Flags |= CCNoCache
			return
		case EqualFold(name, "no-store"):
			cc.Flags |= CCNoStore
			return
		case EqualFold(name, "s-maxage"):
			num = &cc.SMaxage
		}
	case 9:
		switch {
		case EqualFold(name, "max-stale"):
			if !hasArg {
				if cc.MaxStale < 0 {
					cc.MaxStale = DeltaInfinity
				}
				return
			}
			num = &cc.MaxStale
		case EqualFold(name, "min-fresh"):
			num = &cc.MinFresh
		case EqualFold(name, "immutable"):
			cc.Flags |= CCImmutable
			return
		}
	case 12:
		if EqualFold(name, "no-transform") {
			cc.Flags |= CCNoTransform
			return
		}
	case 14:
		switch {
		case EqualFold(name, "only-if-cached"):
			cc.Flags |= CCOnlyIfCached
			return
		case EqualFold(name, "stale-if-error"):
			num = &cc.StaleIfError
		}
	case 15:
		switch {
		case EqualFold(name, "must-revalidate"):
			cc.Flags |= CCMustRevalidate
			return
		case EqualFold(name, "must-understand"):
			cc.Flags |= CCMustUnderstand
			return
		}
	case 16:
		if EqualFold(name, "proxy-revalidate") {
			cc.Flags |= CCProxyRevalidate
			return
		}
	case 22:
		if EqualFold(name, "stale-while-revalidate") {
			num = &cc.StaleWhileRevalidate
		}
	}
	if num != nil && *num < 0 {
		*num = deltaSeconds(arg)
	}
}

// deltaSeconds reads delta-seconds (RFC 9111 §1.2.2): digits only, capped
// at DeltaInfinity; anything else (empty, a sign, a fraction) is 0.
func deltaSeconds[T ~string | ~[]byte](s T) int64 {
	if len(s) == 0 {
		return 0
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0
		}
		if n < DeltaInfinity {
			n = n*10 + int64(c-'0')
		}
	}
	if n > DeltaInfinity {
		n = DeltaInfinity
	}
	return n
}
