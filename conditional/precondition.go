package conditional

import (
	"net/http"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// Validators are what the conditional fields are evaluated against: the
// selected representation's entity tag and modification date. Either may
// be unknown. Callers fill one per representation; the functions of this
// package only read it. The zero Validators is a representation with
// neither: only "*" and the absence of fields match it.
type Validators struct {
	// ETag is the entity tag as the ETag field sends it: `"xyz"` for a
	// strong tag, `W/"xyz"` for a weak one, or "" for none. A weak tag
	// matches If-None-Match but never If-Match or If-Range.
	ETag string

	// LastModified is the Last-Modified field value sent with the
	// representation, or "" when none is sent: If-Modified-Since and
	// If-Unmodified-Since are then ignored and an If-Range date never
	// matches. A conditional field that repeats it exactly is taken as
	// its time without being parsed.
	LastModified string

	// ModTime is the time LastModified shows; only its whole seconds
	// count.
	ModTime time.Time
}

// Weak reports whether v's entity tag is a weak one.
func (v *Validators) Weak() bool {
	return len(v.ETag) > 2 && v.ETag[0] == 'W' && v.ETag[1] == '/'
}

// Precondition evaluates the conditional request fields of a GET or HEAD
// r for an existing representation with validators v, in the order of
// RFC 9110 §13.2.2 (steps 1 to 4). It returns 412 (Precondition Failed),
// 304 (Not Modified), or 0 to go on with the request. If-Range, step 5,
// is RangeApplies. It allocates nothing unless a field is repeated.
func Precondition(r *engine.Request, v *Validators) int {
	// Step 1: If-Match, strong comparison; "*" matches the existing
	// representation (§13.1.1).
	if im := r.HeaderList("If-Match"); im != nil {
		if !MatchETag(im, v.ETag, false) {
			return http.StatusPreconditionFailed
		}
	} else if ius := r.HeaderList("If-Unmodified-Since"); ius != nil && v.LastModified != "" {
		// Step 2: If-Unmodified-Since, only without If-Match; an invalid
		// date is ignored (§13.1.4), and so is a field sent twice (its
		// lines join into a list, which is no date).
		if t, ok := parseDate(ius, v); ok && v.ModTime.Truncate(time.Second).After(t) {
			return http.StatusPreconditionFailed
		}
	}

	// Step 3: If-None-Match, weak comparison (§13.1.2): a match means the
	// client's copy is current.
	if inm := r.HeaderList("If-None-Match"); inm != nil {
		if MatchETag(inm, v.ETag, true) {
			return http.StatusNotModified
		}
		return 0
	}

	// Step 4: If-Modified-Since, only without If-None-Match and only for a
	// representation with a modification time; an invalid date is ignored
	// (§13.1.3), as is a field sent twice.
	if ims := r.HeaderList("If-Modified-Since"); ims != nil && v.LastModified != "" {
		if t, ok := parseDate(ims, v); ok && !v.ModTime.Truncate(time.Second).After(t) {
			return http.StatusNotModified
		}
	}
	return 0
}

// RangeApplies is step 5 of RFC 9110 §13.2.2: whether a GET's Range field
// is to be honoured for the representation with validators v. Without
// If-Range it is; with it, only when its validator matches the
// representation's: an entity tag by the strong comparison, a date
// exactly (§13.1.5). A weak tag never matches, nor does a field sent
// twice.
func RangeApplies(r *engine.Request, v *Validators) bool {
	ir := r.HeaderList("If-Range")
	if ir == nil {
		return true
	}
	// An entity tag starts with a quote or "W/"; a date never does (its
	// day name may start with a W: "Wed, 21 Oct 2015 07:28:00 GMT").
	if len(ir) > 0 && (ir[0] == '"' || len(ir) > 1 && ir[0] == 'W' && ir[1] == '/') {
		return v.ETag != "" && v.ETag[0] == '"' && string(ir) == v.ETag
	}
	if v.LastModified == "" {
		return false
	}
	t, ok := parseDate(ir, v)
	return ok && t.Equal(v.ModTime.Truncate(time.Second))
}

// parseDate parses an HTTP-date field value (the three formats of RFC 9110
// §5.6.7, in GMT only). The usual echo of v.LastModified is recognised
// without parsing.
func parseDate(b []byte, v *Validators) (time.Time, bool) {
	if string(b) == v.LastModified {
		return v.ModTime.Truncate(time.Second), true
	}
	return httpgrammar.ParseDate(b)
}

// MatchETag reports whether an If-Match or If-None-Match field value list
// ("*" or a comma-separated list of entity tags) matches etag (as
// Validators.ETag holds it), using the weak comparison (opaque tags
// equal) or the strong one (also neither weak), RFC 9110 §8.8.3.2. "*"
// matches any etag, including none (the caller knows the representation
// exists). A malformed list matches nothing from the malformed element
// on. list is only read.
func MatchETag(list []byte, etag string, weak bool) bool {
	etagWeak := len(etag) > 2 && etag[0] == 'W' && etag[1] == '/'
	if etagWeak {
		etag = etag[2:]
	}
	for {
		for len(list) > 0 && (list[0] == ' ' || list[0] == '\t' || list[0] == ',') {
			list = list[1:]
		}
		if len(list) == 0 {
			return false
		}
		if list[0] == '*' {
			return true
		}
		isWeak := len(list) > 2 && list[0] == 'W' && list[1] == '/'
		if isWeak {
			list = list[2:]
		}
		if list[0] != '"' {
			return false
		}
		end := 1
		for end < len(list) && list[end] != '"' {
			end++
		}
		if end == len(list) {
			return false
		}
		tag := list[:end+1]
		list = list[end+1:]
		if etag != "" && string(tag) == etag && (weak || !isWeak && !etagWeak) {
			return true
		}
	}
}
