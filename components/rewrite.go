package components

import (
	"fmt"
	"net/http"
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
	// query after a "?", from a template in redirect's placeholders: $path
	// (the canonical path), $name and $1 (the route's path parameters, as
	// {name} or a regular expression's group captured them), $args (the
	// query as received, after a "?" only), $query (at the end only: keep
	// the query), $$ (a $). Without a "?" the query is kept as received;
	// with one, what follows replaces it ("?" alone empties it).
	//
	// To starts with "/" or $path. A parameter is percent-encoded for
	// where it lands (in the path, so that it is path text whatever it
	// holds, its '/' included; in the query, all but letters, digits and
	// "-._~"). The path that results is made canonical as the server
	// makes a request's, and refused with 400 when that changes it (a
	// parameter that makes a "." or ".." segment or an empty one) or
	// cannot be done: so it is the canonical path of the URL the rewrite
	// wrote, and every rule the later components apply to a request's
	// path (files' root and dotfiles, a prefix stripped) applies to it.
	// sluice check refuses a literal path that is not canonical
	// (`/a/../b`, `//a`, `%2F`, `%00`).
	To string `yaml:"to"`
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
	rw := &rewrite{}
	inQuery := false
	for i, p := range parts {
		switch {
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
	// placeholder.
	var sample []byte
	for _, p := range rw.path {
		switch {
		case p.v == "path":
			sample = append(sample, "/x"...)
		case p.param != "":
			sample = append(sample, 'x')
		default:
			sample = append(sample, p.lit...)
		}
	}
	if canon, err := engine.CanonicalPath(sample); err != nil || !decodesTo(sample, canon) {
		why := "it has a \".\" or \"..\" segment or an empty one"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("rewrite: target %q is not a canonical path (%s): write the path the server should see, as a request's canonical path is", to, why)
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
	newQuery bool // To has a "?": query replaces the request's
}

func (rw *rewrite) handle(c *pipe.Conn) bool {
	r := c.Request
	raw, canon, err := rw.rewritePath(r.Path, c.Param)
	if err != nil {
		return c.Error(http.StatusBadRequest, "the rewritten path is refused: "+err.Error())
	}
	if rw.newQuery {
		r.Query = rw.rewriteQuery(r.Path, r.Query, c.Param)
	}
	r.RawPath, r.Path = raw, canon
	return true
}

// rewritePath expands the path of To for the canonical path p and the
// parameters param gives, and returns it as written (raw) and canonical;
// an error when it cannot be made canonical or that would change it.
func (rw *rewrite) rewritePath(p []byte, param func(string) string) (raw, canon []byte, err error) {
	for _, pt := range rw.path {
		switch {
		case pt.v == "path":
			raw = redirectEscape(raw, p, false)
		case pt.param != "":
			raw = appendPathValue(raw, param(pt.param))
		default:
			raw = append(raw, pt.lit...)
		}
	}
	canon, err = engine.CanonicalPath(raw)
	if err != nil {
		return nil, nil, err
	}
	if !decodesTo(raw, canon) {
		return nil, nil, errNotCanonical
	}
	return raw, canon, nil
}

var errNotCanonical = fmt.Errorf("a path parameter made a \".\" or \"..\" segment or an empty one")

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
