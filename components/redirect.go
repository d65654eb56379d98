package components

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "redirect", Kind: KindPipe, Scalar: "to", Answers: true, Stops: "3xx",
		Example: `redirect: {to: "https://example.com$path$query", status: 308}`,
	}, func(o RedirectOptions, _ Context) (pipe.Component, error) { return NewRedirect(o) })
}

// RedirectOptions configures the redirect pipe. A config scalar
// (`redirect: https://example.com$path$query`) sets To.
type RedirectOptions struct {
	// To is the Location sent: a URL or a path, in which these variables
	// are replaced (also written ${name}; $$ is a literal $):
	//
	//	$path   the request's canonical path (the one it was routed
	//	        on: decoded, dot segments removed, slashes merged),
	//	        percent-encoded again, without StripPrefix; after a "?"
	//	        encoded as one query value ("/login?next=$path")
	//	$query  "?" and the query as received, or nothing when the
	//	        request has no query; never after To's own "?"
	//	$args   the query as received, without the "?"; only after a
	//	        "?" in To ("/search?$args")
	//	$host   the request's host (Host field or absolute-form target),
	//	        with the port it names, if any; only in the host of a To
	//	        with a scheme
	//	$hostname  the request's host without its port: for a To that
	//	        changes the scheme or the port ("https://$hostname$path",
	//	        "http://$hostname:8080$path"), where $host would keep the
	//	        port the client named; only in the host of a To with a
	//	        scheme
	//	$name   the route's path parameter name ({name} in its pattern,
	//	        or a regular expression's group (?P<name>...)), for a
	//	        name that is not one of the above; ${name} (in a config
	//	        file $${name}) ends it before a letter or digit
	//	$1      the route's first path parameter, named or not; $2 the
	//	        second...; not in the host of a To
	//
	// A "/" of To's text beside $path is not doubled: "$path/index.html"
	// is "/index.html" for "/" and "/a/index.html" for "/a/" and "/a".
	//
	// A path parameter is percent-encoded for where it lands: in the
	// path, all but what a path holds as is (its '/' stay; a ':' is
	// encoded); after a "?", all but letters, digits and "-._~", so it is
	// one query value. A variable's name wins over a parameter's (a
	// parameter called path is $1 or the like). sluice check refuses a
	// parameter the route's patterns do not capture (a misspelt variable
	// included).
	//
	// What is substituted is percent-encoded where a URL may not hold it
	// as is (a backslash, a quote, "<", a byte above 0x7e...), so the
	// Location is plain ASCII. A To with a scheme names its host
	// ("https://example.com$path", "https://$host$path"), as does one
	// starting with "//"; any other To is a path on this server, and its
	// Location never starts with two slashes or their look-alikes (a
	// backslash, "%2F", "%5C", an encoded tab or newline): those at its
	// start are one slash, so a request for "//evil.com" can never send
	// a browser to another host. A request without a host answers 400
	// when To needs $host.
	To string `yaml:"to"`

	// Status is 301, 302, 303, 307 or 308. Default 302. 307 and 308 make
	// clients repeat the method and body; 301 and 302 let them turn a
	// POST into a GET.
	Status int `yaml:"status"`

	// StripPrefix is removed from the start of $path when the path is
	// StripPrefix or continues it with "/", to move a tree: with
	// StripPrefix "/old" and To "/new$path$query", "/old/a?b" goes to
	// "/new/a?b" (and "/older" keeps its path whole). It starts with "/"
	// and does not end with one.
	StripPrefix string `yaml:"strip_prefix"`
}

// NewRedirect returns the redirect Pipe: it answers every request with
// Status, a Location built from To, and a short HTML note linking to it,
// and stops the pipeline. It refuses a To whose Location could name a
// host the configuration does not: one with a scheme but no "//host", one
// using $host outside the host, one with a backslash. It is safe for
// concurrent use.
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
	if strings.TrimSpace(opts.To) != opts.To {
		return nil, fmt.Errorf("redirect: target %q starts or ends with a space", opts.To)
	}
	if strings.ContainsRune(opts.To, '\\') {
		return nil, fmt.Errorf("redirect: target %q contains a backslash, which browsers read as /", opts.To)
	}
	if p := opts.StripPrefix; p != "" && (p[0] != '/' || strings.HasSuffix(p, "/")) {
		return nil, fmt.Errorf("redirect: strip_prefix %q must start with / and not end with /", p)
	}
	parts, err := redirectParse(opts.To)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if p.v == "query" && p.inQuery {
			return nil, fmt.Errorf("redirect: $query in %q comes after the \"?\", where it would start a second query (\"?a=1?b=2\"): end the target with $query to keep the request's query as it is, or write ?a=1&$args to add it to the target's", opts.To)
		}
	}
	absolute, err := redirectAbsolute(opts.To, parts)
	if err != nil {
		return nil, err
	}
	rd := &redirect{status: status, parts: parts, strip: opts.StripPrefix, absolute: absolute,
		title: fmt.Sprintf("%d %s", status, http.StatusText(status))}
	return pipe.Pipe(rd.handle), nil
}

type redirect struct {
	status   int
	parts    []redirectPart
	strip    string
	title    string
	absolute bool // To names its host: scheme://host or //host
}

// redirectPart is a literal, a variable or a path parameter.
type redirectPart = placeholder

var redirectVars = placeholderVars

// redirectParse splits a To template into literals, variables and path
// parameters.
func redirectParse(to string) ([]redirectPart, error) {
	return parsePlaceholders("redirect", to, redirectVars)
}

// redirectAbsolute reports whether the To template names its host
// (scheme://host… or //host…) rather than being a path or query on this
// server. It refuses a scheme without "//" ("https:$path" is
// "https://evil.com" to a browser for the path "//evil.com"), a host that
// is empty, and $host anywhere but in the host.
func redirectAbsolute(to string, parts []redirectPart) (bool, error) {
	lead := "" // the literal text before the first variable
	if parts[0].v == "" {
		lead = parts[0].lit
	}
	rest := lead
	if n := redirectSchemeLen(lead); n > 0 {
		rest = lead[n+1:]
		if !strings.HasPrefix(rest, "//") {
			return false, fmt.Errorf("redirect: target %q has a scheme but no //host", to)
		}
	}
	absolute := strings.HasPrefix(rest, "//")
	// The authority runs from "//" to the first '/', '?' or '#', or to
	// $path or $query (which start with '/' and '?').
	inHost, hostLen := absolute, len(rest)-2
	if absolute {
		if i := strings.IndexAny(rest[2:], "/?#"); i >= 0 {
			inHost, hostLen = false, i
		}
	}
	for i, p := range parts {
		switch {
		case i == 0 && p.v == "":
		case (p.v == "host" || p.v == "hostname") && !inHost:
			return false, fmt.Errorf("redirect: $%s is allowed only in the host of a target with a scheme (https://$%s$path), not in %q", p.v, p.v, to)
		case p.v == "host" || p.v == "hostname":
			hostLen++
		case (p.param != "" || p.v == "args") && inHost:
			return false, fmt.Errorf("redirect: %s is not allowed in the host of %q: the host is the configuration's (or $host)", p, to)
		case p.v == "path" || p.v == "query":
			inHost = false
		case inHost:
			if j := strings.IndexAny(p.lit, "/?#"); j >= 0 {
				inHost, hostLen = false, hostLen+j
			} else {
				hostLen += len(p.lit)
			}
		}
	}
	if absolute && hostLen == 0 {
		return false, fmt.Errorf("redirect: target %q names no host after //", to)
	}
	return absolute, nil
}

func (rd *redirect) handle(c *pipe.Conn) bool {
	b, ok := rd.expand(c.Request, c.Param)
	if !ok {
		return c.Error(http.StatusBadRequest, "the request names no host to redirect to")
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

// location builds the Location for r, on a route without path
// parameters. It reports false when To needs r's host and r has none fit
// for a URL.
func (rd *redirect) location(r *engine.Request) ([]byte, bool) {
	return rd.expand(r, func(string) string { return "" })
}

// expand builds the Location for r, whose path parameters param gives
// (pipe.Conn.Param). It reports false when To needs r's host and r has
// none fit for a URL.
func (rd *redirect) expand(r *engine.Request, param func(string) string) ([]byte, bool) {
	var b []byte
	for i, p := range rd.parts {
		switch p.v {
		case "":
			if p.param != "" {
				if p.inQuery {
					b = appendQueryValue(b, param(p.param))
				} else {
					b = appendPathValue(b, param(p.param))
				}
				continue
			}
			b = append(b, p.lit...)
		case "path":
			path := rd.stripped(r.Path)
			if len(b) == 0 && len(path) == 0 && !rd.absolute {
				path = redirectSlash // "" would be this very URL again
			}
			if bytes.ContainsAny(b, "?#") {
				// A query value ("/login?next=$path"): a '&' or '=' of
				// the path must not start another parameter.
				b = appendQueryValue(b, string(path))
				continue
			}
			// A "/" of the target's text next to the path, which starts
			// with one and may end with one, is not doubled, as in
			// rewrite: "$path/index.html" for "/a/" is "/a/index.html".
			if len(b) > 0 && b[len(b)-1] == '/' && len(path) > 0 && path[0] == '/' {
				path = path[1:]
			}
			b = redirectEscape(b, path, false)
			if i+1 < len(rd.parts) && rd.parts[i+1].literal() && strings.HasPrefix(rd.parts[i+1].lit, "/") && len(b) > 0 && b[len(b)-1] == '/' {
				b = b[:len(b)-1]
			}
		case "query":
			if len(r.Query) > 0 {
				b = append(b, '?')
				b = redirectEscape(b, r.Query, true)
			}
		case "args":
			b = redirectEscape(b, r.Query, true)
		case "host":
			if !redirectValidHost(r.Host) {
				return nil, false
			}
			b = append(b, r.Host...)
		case "hostname":
			if !redirectValidHost(r.Host) {
				return nil, false
			}
			b = append(b, redirectHostname(r.Host)...)
		}
	}
	if !rd.absolute {
		b = redirectOneSlash(b)
	}
	return b, true
}

var redirectSlash = []byte("/")

// redirectHostname returns the host of h (a valid host, see
// redirectValidHost) without its port: "[::1]" of "[::1]:8080".
func redirectHostname(h []byte) []byte {
	if i := bytes.LastIndexByte(h, ':'); i >= 0 && bytes.IndexByte(h[i:], ']') < 0 {
		return h[:i]
	}
	return h
}

// stripped returns the canonical path with StripPrefix removed where the path
// is the prefix or continues it with '/'. A target that is not a path
// (OPTIONS *, CONNECT's authority) stands for "/".
func (rd *redirect) stripped(path []byte) []byte {
	if len(path) == 0 || path[0] != '/' {
		return redirectSlash
	}
	if rest, ok := stripPathPrefix(path, rd.strip); ok {
		return rest
	}
	return path
}

// stripPathPrefix returns path without prefix, and true, when path is
// prefix or continues it with '/' ("/old" strips "/old" and "/old/a",
// not "/older"); an empty prefix strips nothing. For redirect's and
// rewrite's strip_prefix.
func stripPathPrefix(path []byte, prefix string) ([]byte, bool) {
	n := len(prefix)
	if n == 0 || len(path) < n || string(path[:n]) != prefix || len(path) > n && path[n] != '/' {
		return path, false
	}
	return path[n:], true
}
