package files

import (
	"net/http"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// precondition evaluates the conditional request fields of a GET or HEAD
// for the file e in the order of RFC 9110 §13.2.2 and returns the status
// to answer with instead of the content, or 0 to send the content.
func precondition(r *engine.Request, e *entry) int {
	// Steps 1 and 2, If-Match and If-Unmodified-Since (412), come with the
	// issue for the complete §13 set.

	// Step 3: If-None-Match, with the weak comparison (§13.1.2).
	if inm := r.Header("If-None-Match"); inm != nil {
		if matchETag(inm, e.etag, true) {
			return http.StatusNotModified
		}
		return 0
	}

	// Step 4: If-Modified-Since, only without If-None-Match and only for
	// a file with a known modification time.
	if ims := r.Header("If-Modified-Since"); ims != nil && e.lastMod != "" {
		if string(ims) == e.lastMod { // the usual echo: no parsing
			return http.StatusNotModified
		}
		t, err := http.ParseTime(string(ims))
		if err == nil && !e.modTime.Truncate(time.Second).After(t) {
			return http.StatusNotModified
		}
	}

	// Step 5, If-Range, comes with range requests.
	return 0
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
