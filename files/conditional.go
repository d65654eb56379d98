package files

import (
	"net/http"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// validators are what the conditional request fields are evaluated
// against: the selected representation's entity tag and modification
// time. Either may be empty (unknown).
type validators struct {
	etag    string    // strong entity tag, or ""
	lastMod string    // Last-Modified field value, or ""
	modTime time.Time // the modification time lastMod shows
}

// precondition evaluates the conditional request fields of a GET or HEAD
// for an existing representation with validators v, in the order of RFC
// 9110 §13.2.2. It returns 412 (Precondition Failed), 304 (Not Modified),
// or 0 to go on with the request. If-Range is evaluated separately
// (rangeApplies), as the last step.
func precondition(r *engine.Request, v *validators) int {
	// Step 1: If-Match, strong comparison; "*" matches the existing
	// representation (§13.1.1).
	if im := r.HeaderList("If-Match"); im != nil {
		if !matchETag(im, v.etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if ius := r.HeaderList("If-Unmodified-Since"); ius != nil && v.lastMod != "" {
		// Step 2: If-Unmodified-Since, only without If-Match; an invalid
		// date is ignored (§13.1.4), and so is a field sent twice (its
		// lines join into a list, which is no date).
		if t, ok := parseDate(ius, v); ok && v.modTime.Truncate(time.Second).After(t) {
			return http.StatusPreconditionFailed
		}
	}

	// Step 3: If-None-Match, weak comparison (§13.1.2): a match means the
	// client's copy is current.
	if inm := r.HeaderList("If-None-Match"); inm != nil {
		if matchETag(inm, v.etag, true) {
			return http.StatusNotModified
		}
		return 0
	}

	// Step 4: If-Modified-Since, only without If-None-Match and only for a
	// representation with a modification time; an invalid date is ignored
	// (§13.1.3), as is a field sent twice.
	if ims := r.HeaderList("If-Modified-Since"); ims != nil && v.lastMod != "" {
		if t, ok := parseDate(ims, v); ok && !v.modTime.Truncate(time.Second).After(t) {
			return http.StatusNotModified
		}
	}
	return 0
}

// rangeApplies is step 5 of RFC 9110 §13.2.2: whether a GET's Range field
// is to be honoured. Without If-Range it is; with it, only when its
// validator matches the representation's: an entity tag by the strong
// comparison, a date exactly (§13.1.5). A weak tag never matches, nor
// does a field sent twice.
func rangeApplies(r *engine.Request, v *validators) bool {
	ir := r.HeaderList("If-Range")
	if ir == nil {
		return true
	}
	// An entity tag starts with a quote or "W/"; a date never does (its
	// day name may start with a W: "Wed, 21 Oct 2015 07:28:00 GMT").
	if len(ir) > 0 && (ir[0] == '"' || len(ir) > 1 && ir[0] == 'W' && ir[1] == '/') {
		return v.etag != "" && v.etag[0] == '"' && string(ir) == v.etag
	}
	if v.lastMod == "" {
		return false
	}
	t, ok := parseDate(ir, v)
	return ok && t.Equal(v.modTime.Truncate(time.Second))
}

// parseDate parses an HTTP-date field value (the three formats of RFC 9110
// §5.6.7, in GMT only). The usual echo of v.lastMod is recognised
// without parsing.
func parseDate(b []byte, v *validators) (time.Time, bool) {
	if string(b) == v.lastMod {
		return v.modTime.Truncate(time.Second), true
	}
	return httpgrammar.ParseDate(b)
}

// matchETag reports whether the If-Match or If-None-Match field value list
// ("*" or a comma-separated list of entity tags) matches etag, using the
// weak comparison (opaque tags equal) or the strong one (also neither
// weak), RFC 9110 §8.8.3.2. "*" matches any etag, including none (the
// caller knows the representation exists). A malformed list matches
// nothing from the malformed element on.
func matchETag(list []byte, etag string, weak bool) bool {
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
