package components

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "rewrite", Kind: KindPipe, Scalar: "to", Stops: "400",
		Example: `rewrite: "/index.php?route=$path&$args"`,
	}, func(o RewriteOptions, _ Context) (pipe.Component, error) { return NewRewrite(o) })
}

// RewriteOptions configures the rewrite pipe. A config scalar
// (`rewrite: /index.php?route=$1`) sets To.
type RewriteOptions struct {
	// To is the path the rest of the pipeline sees, and optionally its
	// query after a "?", from a template in redirect's placeholders but
	// $host: $path (the canonical path), $name and $1 (the route's path
	// parameters, as {name} or a regular expression's group captured
	// them), $args (the query as received, after a "?" only), $query (at
	// the end and before any "?" only: keep the query), $$ (a $). Without
	// a "?" the query is kept as received; with one, what follows
	// replaces it ("?" alone empties it; "?a=1&$args" adds to it).
	//
	// To starts with "/" or $path. A "/" of To's text beside $path is not
	// doubled: "$path/index.html" is "/index.html" for the path "/", and
	// "/a/index.html" for "/a/" and "/a"; "/static/$path" is "/static/a"
	// for "/a". A parameter is percent-encoded for where it lands (in the
	// path, so that it is path text whatever it holds, its '/' included;
	// in the query, all but letters, digits and "-._~"). The path that
	// results is made canonical as the server makes a request's, and
	// refused with 400 when that changes it (a parameter that makes a "."
	// or ".." segment or an empty one) or cannot be done, the message
	// naming the placeholders that made it: so it is the canonical path of
	// the URL the rewrite wrote, and every rule the later components apply
	// to a request's path (files' root and dotfiles, a prefix stripped)
	// applies to it. sluice check refuses a literal path that is not
	// canonical (`/a/../b`, `//a`, `%2F`, `%00`), for any request path
	// $path may stand for.
	To string `yaml:"to"`

	// StripPrefix is removed from the start of $path when the path is
	// StripPrefix or continues it with "/", to move a tree: with
	// StripPrefix "/old" and To "/new$path", "/old/a" is "/new/a" and
	// "/old" is "/new" (and "/older" keeps its path whole: "/new/older").
	// A path that is StripPrefix itself is "/" for a To that starts with
	// $path. It starts with "/" and does not end with one, as redirect's.
	StripPrefix string `yaml:"strip_prefix"`
}

// NewRewrite returns the rewrite Pipe: it sets the request's path (Path,
// and RawPath to its escaped form) and query for the rest of the
// pipeline, as To says, and lets the request go on; a path that the
// rewrite would make non-canonical is answered 400 and stops the
// pipeline. It does not route the request again (nginx's "break", not
// "last"): the components after it in the same pipeline serve the new
// path. The request line (Request.Target) is left as received, so an
// access log records what the client asked for. The pipe is immutable and
// safe for concurrent use.
func NewRewrite(opts RewriteOptions) (pipe.Component, error) {
	rw, err := newRewrite(opts)
	if err != nil {
		return nil, err
	}
	return pipe.Pipe(rw.handle), nil
}

func newRewrite(opts RewriteOptions) (*rewrite, error) {
	to := opts.To
	if to == "" {
		return nil, fmt.Errorf("rewrite: no target (to)")
	}
	if strings.ContainsFunc(to, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return nil, fmt.Errorf("rewrite: target %q contains a space, a control character or a character beyond ASCII: percent-encode it", to)
	}
	if strings.ContainsAny(to, "#\\") {
		return nil, fmt.Errorf("rewrite: target %q contains a '#' or a backslash: percent-encode it (%%23, %%5C)", to)
	}
	parts, err := parsePlaceholders("rewrite", to, rewriteVars)
	if err != nil {
		return nil, err
	}
	if p := opts.StripPrefix; p != "" && (p[0] != '/' || strings.HasSuffix(p, "/")) {
		return nil, fmt.Errorf("rewrite: strip_prefix %q must start with / and not end with /", p)
	}
	rw := &rewrite{strip: opts.StripPrefix}
	inQuery := false
	for i, p := range parts {
		switch {
		case p.v == "query" && inQuery:
			return nil, fmt.Errorf("rewrite: $query in %q comes after the \"?\", where the template's query replaces the client's: drop the \"?\" and what follows it to keep the client's query as received, or write ?a=1&$args to add to it", to)
		case p.v == "query":
			if i != len(parts)-1 {
				return nil, fmt.Errorf("rewrite: $query in %q keeps the query as received and must end the target (or write ?...$args...)", to)
			}
		case inQuery:
			rw.query = append(rw.query, p)
		case p.param == "" && p.v == "" && strings.Contains(p.lit, "?"):
			before, after, _ := strings.Cut(p.lit, "?")
			if before != "" {
				rw.path = append(rw.path, placeholder{lit: before})
			}
			rw.newQuery, inQuery = true, true
			if after != "" {
				rw.query = append(rw.query, placeholder{lit: after, inQuery: true})
			}
		default:
			rw.path = append(rw.path, p)
		}
	}
	if len(rw.path) == 0 || !(rw.path[0].v == "path" || rw.path[0].v == "" && rw.path[0].param == "" && strings.HasPrefix(rw.path[0].lit, "/")) {
		return nil, fmt.Errorf("rewrite: target %q must start with / or $path: it is a path on this server", to)
	}
	// The literal text must be canonical: try it with "x" for each
	// parameter, and for $path with a path with and without a final
	// slash, and "/".
	x := func(string) string { return "x" }
	for _, sample := range []string{"/x", "/x/", "/"} {
		if _, _, err := rw.rewritePath([]byte(sample), x); err != nil {
			why := "it makes " + err.(*refusal).what
			if slices.ContainsFunc(rw.path, func(p placeholder) bool { return p.v == "path" }) {
				why += " for the request path " + sample
			}
			return nil, fmt.Errorf("rewrite: target %q is not a canonical path (%s): write the path the server should see, as a request's canonical path is", to, why)
		}
	}
	for _, p := range rw.query {
		if p.lit != "" && !validQueryText(p.lit) {
			return nil, fmt.Errorf("rewrite: the query of %q has a %% that starts no escape: write %%25 for a %%", to)
		}
	}
	return rw, nil
}

var rewriteVars = []string{"path", "query", "args"}

type rewrite struct {
	path     []placeholder
	query    []placeholder
	newQuery bool   // To has a "?": query replaces the request's
	strip    string // StripPrefix
}

func (rw *rewrite) handle(c *pipe.Conn) bool {
	r := c.Request
	p := rw.stripped(r.Path)
	raw, canon, err := rw.rewritePath(p, c.Param)
	if err != nil {
		return c.Error(http.StatusBadRequest, "the rewritten path is refused: "+err.Error())
	}
	if rw.newQuery {
		r.Query = rw.rewriteQuery(p, r.Query, c.Param)
	}
	r.RawPath, r.Path = raw, canon
	return true
}

// stripped returns the canonical path p for $path: without StripPrefix
// where p is it or continues it with '/', and "/" where nothing would be
// left of a path that To starts with.
func (rw *rewrite) stripped(p []byte) []byte {
	rest, ok := stripPathPrefix(p, rw.strip)
	if ok && len(rest) == 0 && rw.path[0].v == "path" {
		return redirectSlash
	}
	return rest
}

// rewritePath expands the path of To for the canonical path p and the
// parameters param gives, and returns it as written (raw) and canonical;
// a *refusal when it cannot be made canonical or that would change it.
func (rw *rewrite) rewritePath(p []byte, param func(string) string) (raw, canon []byte, err error) {
	raw = rw.expandPath(nil, p, param, nil)
	canon, err = engine.CanonicalPath(raw)
	if err == nil && decodesTo(raw, canon) {
		return raw, canon, nil
	}
	var ends []int
	raw = rw.expandPath(raw[:0], p, param, &ends)
	return nil, nil, rw.refusal(raw, ends)
}

// expandPath appends to raw the path of To for the canonical path p and
// the parameters param gives; with ends, it also appends to *ends the
// length of raw after each part. A "/" of the template's text next to
// $path, which starts with one (and may end with one), is not doubled:
// "$path/index.html" for "/" is "/index.html", "/files/$path" for "/a"
// is "/files/a".
func (rw *rewrite) expandPath(raw, p []byte, param func(string) string, ends *[]int) []byte {
	for i, pt := range rw.path {
		switch {
		case pt.v == "path":
			v := p
			if i > 0 && rw.path[i-1].literal() && len(raw) > 0 && raw[len(raw)-1] == '/' && len(v) > 0 && v[0] == '/' {
				v = v[1:]
			}
			raw = redirectEscape(raw, v, false)
			if i+1 < len(rw.path) && rw.path[i+1].literal() && strings.HasPrefix(rw.path[i+1].lit, "/") && len(raw) > 0 && raw[len(raw)-1] == '/' {
				raw = raw[:len(raw)-1]
			}
		case pt.param != "":
			raw = appendPathValue(raw, param(pt.param))
		default:
			raw = append(raw, pt.lit...)
		}
		if ends != nil {
			*ends = append(*ends, len(raw))
		}
	}
	return raw
}

// refusal is why a rewritten path is refused: what canonicalisation
// would refuse or change in it, and the placeholders that wrote that.
type refusal struct {
	what string   // `a ".." segment`, "an empty segment"...
	by   []string // "$1", "$name", "$path"; none when only text did
}

func (e *refusal) Error() string {
	if len(e.by) == 0 {
		return "the template made " + e.what
	}
	by := strings.Join(e.by[:len(e.by)-1], ", ")
	if by != "" {
		by += " and "
	}
	return by + e.by[len(e.by)-1] + " made " + e.what
}

// refusal finds the first segment of raw, the path expanded with the
// part ends ends, that canonicalisation refuses or changes, and names
// the placeholders that wrote it.
func (rw *rewrite) refusal(raw []byte, ends []int) *refusal {
	for s := 1; s <= len(raw); {
		e := s + segmentLenOf(raw[s:])
		if what := segmentFault(raw, s, e); what != "" {
			from, to := s, e
			if s == e { // an empty segment: the slashes around it made it
				from, to = s-1, e+1
			}
			return &refusal{what: what, by: rw.blame(ends, from, to)}
		}
		s = e + 1
	}
	return &refusal{what: "a path that is not canonical"}
}

func segmentLenOf(b []byte) int {
	if i := bytes.IndexByte(b, '/'); i >= 0 {
		return i
	}
	return len(b)
}

// segmentFault says what canonicalisation refuses or changes in the
// segment raw[s:e] of a path, or "" when it keeps it as it is.
func segmentFault(raw []byte, s, e int) string {
	if s == e {
		if e < len(raw) {
			return "an empty segment"
		}
		return "" // the final slash
	}
	var d []byte
	for i := s; i < e; i++ {
		c := raw[i]
		if c == '%' {
			v := -1
			if i+2 < e {
				v = redirectDecodeAt(raw, i)
			}
			switch v {
			case -1:
				return "a % that starts no escape"
			case 0:
				return "a NUL (%00)"
			case '/':
				return "an encoded slash (%2F)"
			}
			c = byte(v)
			i += 2
		}
		d = append(d, c)
	}
	if string(d) == "." || string(d) == ".." {
		return fmt.Sprintf("a %q segment", d)
	}
	return ""
}

// blame returns the placeholders of the path of To that wrote some of
// raw[from:to], ends being where each part ended; a placeholder that
// wrote nothing is blamed when it stands inside that span.
func (rw *rewrite) blame(ends []int, from, to int) []string {
	var by []string
	start := 0
	for i, pt := range rw.path {
		end := ends[i]
		start = min(start, end)
		var name string
		switch {
		case pt.v != "":
			name = "$" + pt.v
		case pt.param != "":
			name = "$" + pt.param
		}
		hit := start < to && end > from
		if start == end {
			hit = from <= start && start <= to
		}
		if name != "" && hit && !slices.Contains(by, name) {
			by = append(by, name)
		}
		start = end
	}
	return by
}

// rewriteQuery expands the query of To for the request's canonical path
// p and query q and the parameters param gives.
func (rw *rewrite) rewriteQuery(p, q []byte, param func(string) string) []byte {
	b := []byte{}
	for _, pt := range rw.query {
		switch {
		case pt.v == "args":
			b = redirectEscape(b, q, true)
		case pt.v == "path":
			b = appendQueryValue(b, string(p))
		case pt.param != "":
			b = appendQueryValue(b, param(pt.param))
		default:
			b = append(b, pt.lit...)
		}
	}
	return b
}

// decodesTo reports whether the percent-decoding of raw is canon: raw
// spells the canonical path canon, no dot segment or empty segment to
// remove.
func decodesTo(raw, canon []byte) bool {
	j := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '%' && i+2 < len(raw) {
			hi, ok1 := httpgrammar.Unhex(raw[i+1])
			lo, ok2 := httpgrammar.Unhex(raw[i+2])
			if ok1 && ok2 {
				c = hi<<4 | lo
				i += 2
			}
		}
		if j >= len(canon) || canon[j] != c {
			return false
		}
		j++
	}
	return j == len(canon)
}

// validQueryText reports whether every '%' of s starts an escape.
func validQueryText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && redirectDecodeAt([]byte(s), i) < 0 {
			return false
		}
	}
	return true
}
