package components

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"

	"github.com/sluice-server/sluice/pipe"
)

// RedirectOptions configures the redirect pipe. A config scalar
// (`redirect: https://example.com$path$query`) sets To.
type RedirectOptions struct {
	// To is the Location sent: a URL or a path, in which these variables
	// are replaced (also written ${name}; $$ is a literal $):
	//
	//	$path   the request path as received (still percent-encoded),
	//	        without StripPrefix
	//	$query  "?" and the query as received, or nothing when the
	//	        request has no query
	//	$host   the request's host (Host field or absolute-form target;
	//	        empty for an HTTP/1.0 request without one)
	To string `yaml:"to"`

	// Status is 301, 302, 303, 307 or 308. Default 302. 307 and 308 make
	// clients repeat the method and body; 301 and 302 let them turn a
	// POST into a GET.
	Status int `yaml:"status"`

	// StripPrefix is removed from the start of $path when the path begins
	// with it, to move a tree: with StripPrefix "/old" and To
	// "/new$path$query", "/old/a?b" goes to "/new/a?b".
	StripPrefix string `yaml:"strip_prefix"`
}

// NewRedirect returns the redirect Pipe: it answers every request with
// Status, a Location built from To, and a short HTML note linking to it,
// and stops the pipeline. It is safe for concurrent use.
func NewRedirect(opts RedirectOptions) (pipe.Component, error) {
	status := opts.Status
	if status == 0 {
		status = http.StatusFound
	}
	switch status {
	case 301, 302, 303, 307, 308:
	default:
		return nil, fmt.Errorf("redirect: status %d is not 301, 302, 303, 307 or 308", opts.Status)
	}
	if opts.To == "" {
		return nil, fmt.Errorf("redirect: no target (to)")
	}
	if strings.ContainsFunc(opts.To, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return nil, fmt.Errorf("redirect: target %q contains control characters", opts.To)
	}
	parts, err := redirectParse(opts.To)
	if err != nil {
		return nil, err
	}
	rd := &redirect{status: status, parts: parts, strip: opts.StripPrefix,
		title: fmt.Sprintf("%d %s", status, http.StatusText(status))}
	return pipe.Pipe(rd.handle), nil
}

type redirect struct {
	status int
	parts  []redirectPart
	strip  string
	title  string
}

// redirectPart is a literal (v == "") or a variable.
type redirectPart struct{ lit, v string }

var redirectVars = []string{"path", "query", "host"}

// redirectParse splits a To template into literals and variables.
func redirectParse(to string) ([]redirectPart, error) {
	var parts []redirectPart
	var lit strings.Builder
	for i := 0; i < len(to); i++ {
		if to[i] != '$' {
			lit.WriteByte(to[i])
			continue
		}
		rest := to[i+1:]
		var name string
		switch {
		case strings.HasPrefix(rest, "$"):
			lit.WriteByte('$')
			i++
			continue
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("redirect: unclosed ${ in %q", to)
			}
			name = rest[1:end]
			i += end + 1
		default:
			n := 0
			for n < len(rest) && ('a' <= rest[n] && rest[n] <= 'z' || rest[n] == '_') {
				n++
			}
			name = rest[:n]
			i += n
		}
		known := false
		for _, v := range redirectVars {
			known = known || v == name
		}
		if !known {
			return nil, fmt.Errorf("redirect: unknown variable $%s in %q (want $path, $query or $host; $$ for $)", name, to)
		}
		if lit.Len() > 0 {
			parts = append(parts, redirectPart{lit: lit.String()})
			lit.Reset()
		}
		parts = append(parts, redirectPart{v: name})
	}
	if lit.Len() > 0 {
		parts = append(parts, redirectPart{lit: lit.String()})
	}
	return parts, nil
}

func (rd *redirect) handle(c *pipe.Conn) bool {
	r := c.Request
	var b []byte
	for _, p := range rd.parts {
		switch p.v {
		case "":
			b = append(b, p.lit...)
		case "path":
			path := r.RawPath
			if rd.strip != "" && len(path) >= len(rd.strip) && string(path[:len(rd.strip)]) == rd.strip {
				path = path[len(rd.strip):]
			}
			b = append(b, path...)
		case "query":
			if len(r.Query) > 0 {
				b = append(b, '?')
				b = append(b, r.Query...)
			}
		case "host":
			b = append(b, r.Host...)
		}
	}
	loc := string(b)
	h := c.Header()
	h.Set("Location", loc)
	h.Set("Content-Type", "text/html; charset=utf-8")
	esc := html.EscapeString(loc)
	body := "<!DOCTYPE html>\n<title>" + rd.title + "</title>\n<p>Moved to <a href=\"" + esc + "\">" + esc + "</a>.</p>\n"
	h.SetContentLength(int64(len(body)))
	c.SetStatus(rd.status)
	c.SetContent(func(w pipe.Writer) error {
		_, err := io.WriteString(w, body)
		return err
	})
	return false
}
