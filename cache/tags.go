package cache

import (
	"strings"
	"sync"

	"github.com/sluice-server/sluice/httpgrammar"
)

// Bounds of the tags indexed per stored response: tags beyond
// MaxTags, and tags longer than MaxTagLength, are not indexed.
const (
	MaxTags      = 64
	MaxTagLength = 256
)

// tagIndex maps the tags of stored responses (Cache-Tag, Surrogate-Key)
// to their entries, for PurgeTag. Only entries in the store are in it:
// an entry is added before it enters the store and removed when it
// leaves (evicted, replaced, invalidated or purged), so the index holds
// at most MaxTags names per stored response. The zero value is ready;
// safe for concurrent use.
type tagIndex struct {
	mu      sync.Mutex
	byTag   map[string]map[*entry]struct{}
	byEntry map[*entry][]string
}

func (ix *tagIndex) add(e *entry, tags []string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.byTag == nil {
		ix.byTag = make(map[string]map[*entry]struct{})
		ix.byEntry = make(map[*entry][]string)
	}
	ix.byEntry[e] = tags
	for _, t := range tags {
		set := ix.byTag[t]
		if set == nil {
			set = make(map[*entry]struct{})
			ix.byTag[t] = set
		}
		set[e] = struct{}{}
	}
}

func (ix *tagIndex) remove(e *entry) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	tags, ok := ix.byEntry[e]
	if !ok {
		return
	}
	delete(ix.byEntry, e)
	for _, t := range tags {
		set := ix.byTag[t]
		delete(set, e)
		if len(set) == 0 {
			delete(ix.byTag, t)
		}
	}
}

// entries returns the entries tagged t.
func (ix *tagIndex) entries(t string) []*entry {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	set := ix.byTag[t]
	out := make([]*entry, 0, len(set))
	for e := range set {
		out = append(out, e)
	}
	return out
}

// size returns the number of tags indexed, and of entries with tags.
func (ix *tagIndex) size() (tags, entries int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return len(ix.byTag), len(ix.byEntry)
}

// tagCharge is what indexing one tag of an entry costs beside the tag's
// bytes: the tag's set (a map) and the entry's place in it, and the
// tag's string header in the entry's list. Measured with runtime.MemStats
// around the index's add of 20,000 entries of 64 distinct tags each: 236
// bytes a tag for the maps, and 16 for the string header.
const tagCharge = 256

// responseTags returns the tags of a stored response, or nil: those of
// its Cache-Tag and Surrogate-Key fields (see AppendFieldTags).
func responseTags(m *meta) []string {
	var tags []string
	for _, f := range m.fields {
		tags, _ = AppendFieldTags(tags, f.name, f.value)
	}
	return tags
}

// AppendFieldTags appends to tags the tags a field names, when it is a
// Cache-Tag field (a comma-separated list) or a Surrogate-Key field (a
// space-separated list), and reports whether it is one of those: each
// tag a run of visible ASCII (ValidTag; others are skipped), without
// duplicates, at most MaxTags in all. The cache reads a response's tags
// with it, and a purge request's tags should be read with it too.
func AppendFieldTags[T ~string | ~[]byte](tags []string, name, value T) ([]string, bool) {
	var sep func(rune) bool
	switch {
	case httpgrammar.EqualFold(name, "Cache-Tag"):
		sep = func(r rune) bool { return r == ',' }
	case httpgrammar.EqualFold(name, "Surrogate-Key"):
		sep = func(r rune) bool { return r == ' ' || r == '\t' }
	default:
		return tags, false
	}
	return appendTags(tags, string(value), sep), true
}

// appendTags adds the tags of one field value, split at sep, to tags.
func appendTags(tags []string, v string, sep func(rune) bool) []string {
	for _, t := range strings.FieldsFunc(v, sep) {
		t = httpgrammar.TrimOWS(t)
		if len(tags) == MaxTags {
			return tags
		}
		if !ValidTag(t) || containsString(tags, t) {
			continue
		}
		tags = append(tags, t)
	}
	return tags
}

// ValidTag reports whether t can be a tag: 1 to MaxTagLength bytes of
// visible ASCII (0x21 to 0x7e), no comma.
func ValidTag(t string) bool {
	if t == "" || len(t) > MaxTagLength {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] >= 0x7f || t[i] == ',' {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
