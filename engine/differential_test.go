package engine

// FuzzDifferential parses the same bytes with parseHead and with
// net/http.ReadRequest, the oracle, and compares the verdicts and, where
// both accept, what they understood.
//
// The oracle is ReadRequest plus the checks net/http's server makes right
// after it (server.go readRequest), since parseHead makes those too:
// HTTP/1.1 without Host is 400 (except CONNECT), a Host field that
// httpguts.ValidHostHeader refuses is 400, and a major version other than 1
// is 505.
//
// Where parseHead deliberately differs, an entry of diffExceptions says
// so: a predicate over the input, the direction of the difference, and the
// RFC clause behind it. A difference no entry explains fails the test.

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// rawHead is a crude split of an input into request line and field lines,
// enough for the exception predicates (which are consulted only when the
// two parsers disagree).
type rawHead struct {
	leading bool     // empty lines before the request line
	line    string   // request line, CR stripped
	method  string   // up to the first SP
	target  string   // between the first and second SP
	version string   // after the second SP
	fields  []string // field lines up to the first empty line, CR stripped
	eols    []string // "\r\n" or "\n" ending each line up to the empty line
}

func splitHead(b []byte) rawHead {
	var h rawHead
	s := string(b)
	for strings.HasPrefix(s, "\n") || strings.HasPrefix(s, "\r\n") {
		h.leading = true
		s = s[strings.IndexByte(s, '\n')+1:]
	}
	first := true
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			if first {
				h.line = s
			}
			break
		}
		l, eol := s[:i], "\n"
		if strings.HasSuffix(l, "\r") {
			l, eol = l[:len(l)-1], "\r\n"
		}
		s = s[i+1:]
		h.eols = append(h.eols, eol)
		if first {
			h.line, first = l, false
			continue
		}
		if l == "" {
			break
		}
		h.fields = append(h.fields, l)
	}
	h.method, h.target, _ = strings.Cut(h.line, " ")
	h.target, h.version, _ = strings.Cut(h.target, " ")
	return h
}

// values returns the values of the field lines named name.
func (h rawHead) values(name string) []string {
	var vs []string
	for _, f := range h.fields {
		if n, v, ok := strings.Cut(f, ":"); ok && strings.EqualFold(n, name) {
			vs = append(vs, strings.Trim(v, " \t"))
		}
	}
	return vs
}

type diffDirection int

const (
	weRefuse diffDirection = iota // parseHead refuses what net/http accepts
	weAccept                      // parseHead accepts what net/http refuses
)

// diffExceptions are the deliberate differences from net/http.
var diffExceptions = []struct {
	name string
	dir  diffDirection
	why  string
	pred func(h rawHead, b []byte) bool
}{
	{"leading empty lines", weAccept,
		"RFC 9112 §2.2: a server SHOULD ignore at least one empty line received before the request-line (net/http's ReadRequest does not; its server skips them only after a POST)",
		func(h rawHead, b []byte) bool { return h.leading }},
	{"obs-fold", weRefuse,
		"RFC 9112 §5.2: a server MUST either reject obs-fold with 400 or replace it with SP; net/http replaces it",
		func(h rawHead, b []byte) bool {
			return slices.ContainsFunc(h.fields, func(f string) bool { return f[0] == ' ' || f[0] == '\t' })
		}},
	{"mixed line ends", weRefuse,
		"RFC 9112 §2.2 lets a recipient take a bare LF as a line end, and §11.2 names such differences as the means of request smuggling: a head that mixes bare LF and CRLF is refused (net/http accepts any mix)",
		func(h rawHead, b []byte) bool {
			return slices.Contains(h.eols, "\n") && slices.Contains(h.eols, "\r\n")
		}},
	{"fragment or non-ASCII in the target", weRefuse,
		"RFC 9112 §3.2: request-target = origin-form / absolute-form / authority-form / asterisk-form, built from RFC 3986 characters: visible ASCII, and no '#' (RFC 9110 §7.1: the fragment is not sent); net/http refuses only control bytes",
		func(h rawHead, b []byte) bool {
			return strings.ContainsFunc(h.target, func(r rune) bool { return r == '#' || r >= 0x7f || r == utf8RuneError })
		}},
	{"asterisk-form with another method than OPTIONS", weRefuse,
		"RFC 9112 §3.2.4: asterisk-form is only used for a server-wide OPTIONS request",
		func(h rawHead, b []byte) bool { return h.target == "*" && h.method != "OPTIONS" }},
	{"absolute-form other than http(s)://host", weRefuse,
		"RFC 9110 §4.2.1: an http URI with an empty host MUST be rejected; §4.2.4: userinfo SHOULD be treated as an error; §7.4: the server serves only http and https targets, and refuses others",
		func(h rawHead, b []byte) bool {
			t := strings.ToLower(h.target)
			if strings.HasPrefix(t, "/") || t == "*" || h.method == "CONNECT" {
				return false
			}
			rest, ok := strings.CutPrefix(t, "http://")
			if !ok {
				if rest, ok = strings.CutPrefix(t, "https://"); !ok {
					return true
				}
			}
			auth, _, _ := strings.Cut(rest, "/")
			auth, _, _ = strings.Cut(auth, "?")
			return auth == "" || auth[0] == ':' || !uriHostPort(auth)
		}},
	{"CONNECT other than authority-form, or without Host", weRefuse,
		"RFC 9110 §9.3.6 and RFC 9112 §3.2.3: CONNECT uses only authority-form, uri-host \":\" port; RFC 9112 §3.2: every HTTP/1.1 request needs Host (net/http exempts CONNECT)",
		func(h rawHead, b []byte) bool {
			host, port, ok := strings.Cut(h.target, ":")
			if strings.HasPrefix(h.target, "[") {
				host, port, ok = strings.Cut(h.target, "]:")
			}
			return h.method == "CONNECT" && (!ok || host == "" || !uriHostPort(h.target) || strings.Trim(port, "0123456789") != "" ||
				h.version != "HTTP/1.0" && len(h.values("Host")) == 0)
		}},
	{"authority-form with another method than CONNECT", weRefuse,
		"RFC 9112 §3.2.3: authority-form is only used for CONNECT (net/http accepts a target without '/' as a path)",
		func(h rawHead, b []byte) bool {
			return h.method != "CONNECT" && !strings.HasPrefix(h.target, "/") && !strings.Contains(h.target, "://") && h.target != "*"
		}},
	{"NUL in the decoded path", weRefuse,
		"RFC 3986 §7.3: \"%00\" should be rejected if the application is not expecting raw data in a component; paths map to files here",
		func(h rawHead, b []byte) bool {
			p, _, _ := strings.Cut(h.target, "?")
			return strings.Contains(strings.ToLower(p), "%00")
		}},
	{"encoded slash in the path", weRefuse,
		"RFC 3986 §2.2: \"%2F\" is data within a segment, which a path mapped to files cannot keep apart from the delimiter; refused rather than decoded into a different path",
		func(h rawHead, b []byte) bool {
			return strings.Contains(strings.ToLower(rawTargetPath(h.target)), "%2f")
		}},
	{"dot segments above the root", weRefuse,
		"RFC 3986 §5.2.4 removes dot segments before a path is used; a \"..\" with no segment left to remove names nothing under the root and is refused (nginx: 400)",
		func(h rawHead, b []byte) bool {
			decoded, err := url.PathUnescape(rawTargetPath(h.target))
			_, ok := refCanonical(decoded)
			return err == nil && !ok
		}},
	{"Transfer-Encoding in HTTP/1.0", weRefuse,
		"RFC 9112 §6.1: a server that receives an HTTP/1.0 message with Transfer-Encoding MUST treat the framing as faulty; net/http ignores the field",
		func(h rawHead, b []byte) bool {
			return h.version == "HTTP/1.0" && len(h.values("Transfer-Encoding")) > 0
		}},
	{"Content-Length and Transfer-Encoding", weRefuse,
		"RFC 9112 §6.3 item 3: such a message ought to be handled as an error (smuggling); net/http lets chunked win",
		func(h rawHead, b []byte) bool {
			return len(h.values("Transfer-Encoding")) > 0 && len(h.values("Content-Length")) > 0
		}},
	{"empty elements in the Transfer-Encoding list", weAccept,
		"RFC 9110 §5.6.1: a recipient MUST accept empty list elements (\"chunked,\" is chunked); net/http wants exactly \"chunked\"",
		func(h rawHead, b []byte) bool {
			return slices.ContainsFunc(h.values("Transfer-Encoding"), func(v string) bool { return strings.Contains(v, ",") })
		}},
	{"Content-Length duplicates equal in value but not in spelling", weAccept,
		"RFC 9110 §8.6: a recipient MAY replace duplicated Content-Length values that are all the same decimal number with one; net/http compares the strings",
		func(h rawHead, b []byte) bool {
			vs := h.values("Content-Length")
			return len(vs) > 1 && slices.ContainsFunc(vs, func(v string) bool { return v != vs[0] })
		}},
	{"version other than HTTP/1.x", weRefuse,
		"RFC 9112 §2.3 / RFC 9110 §15.6.6: 505 for a major version other than 1 (net/http's server lets \"PRI * HTTP/2.0\" through to its HTTP/2 preface check)",
		func(h rawHead, b []byte) bool {
			return strings.HasPrefix(h.version, "HTTP/") && !strings.HasPrefix(h.version, "HTTP/1.")
		}},
	{"Host value that is not uri-host [\":\" port]", weRefuse,
		"RFC 9112 §3.2: a Host field with an invalid value MUST get 400; Host = uri-host [ \":\" port ] (RFC 3986 §3.2.2: an IP-literal holds an IPv6 address, a reg-name no ':' or brackets, and pct-encodes only the octets of UTF-8 characters; §3.2.3: port = *DIGIT); a reg-name with an empty label is refused too, as nginx does. net/http checks only which bytes occur",
		func(h rawHead, b []byte) bool {
			return slices.ContainsFunc(h.values("Host"), func(v string) bool { return !uriHostPort(v) })
		}},
	{"over the head limits", weRefuse,
		"RFC 9110 §15.5.15 (414) and RFC 6585 §5 (431): the server bounds what it buffers; net/http's ReadRequest does not",
		func(h rawHead, b []byte) bool {
			return len(h.target) > DefaultMaxTargetBytes || len(b) > DefaultMaxHeaderBytes || len(h.fields) >= DefaultMaxHeaderCount
		}},
}

// uriHostRE is RFC 3986 uri-host [ ":" port ], with IP-literal loosened
// to bracketed hex digits, colons and dots (uriHostPort checks those), and
// pct-encoding in a reg-name only for non-ASCII octets (§3.2.2).
var uriHostRE = regexp.MustCompile(`^(?:\[([0-9A-Fa-f:.]+)(?:%25[-._~%0-9A-Za-z]+)?\]|(?:[-._~!$&'()*+,;=0-9A-Za-z]|%[89A-Fa-f][0-9A-Fa-f])*)(?::[0-9]*)?$`)

func uriHostPort(v string) bool {
	m := uriHostRE.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	if m[1] != "" {
		a, err := netip.ParseAddr(m[1])
		return err == nil && a.Is6()
	}
	host, _, _ := strings.Cut(v, ":")
	return !strings.HasPrefix(host, ".") && !strings.Contains(host, "..")
}

const utf8RuneError = '\uFFFD'

// rawTargetPath is the path of an origin-form or absolute-form target as
// received: without scheme, authority and query.
func rawTargetPath(target string) string {
	p, _, _ := strings.Cut(target, "?")
	if i := strings.Index(p, "://"); i >= 0 && !strings.HasPrefix(p, "/") {
		p = p[i+3:]
		if j := strings.IndexByte(p, '/'); j >= 0 {
			return p[j:]
		}
		return "/"
	}
	return p
}

// goVerdict is what net/http makes of b: the request, or an error.
func goVerdict(b []byte) (*http.Request, error) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, err
	}
	// net/http's server, right after its internal readRequest, which
	// keeps the Host lines that ReadRequest deletes: read them again.
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	tp.ReadLine()
	mime, _ := tp.ReadMIMEHeader()
	hosts, haveHost := mime["Host"]
	if req.ProtoAtLeast(1, 1) && !haveHost && req.Method != "CONNECT" {
		return nil, errors.New("missing required Host header")
	}
	if len(hosts) > 1 {
		return nil, errors.New("too many Host headers")
	}
	if len(hosts) == 1 && !goValidHostHeader(hosts[0]) {
		return nil, errors.New("malformed Host header")
	}
	for k, vs := range mime {
		if !goValidHeaderFieldName(k) {
			return nil, errors.New("invalid header name")
		}
		for _, v := range vs {
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				return nil, errors.New("invalid header value")
			}
		}
	}
	if req.ProtoMajor != 1 {
		return nil, errors.New("unsupported protocol version")
	}
	return req, nil
}

// goValidHeaderFieldName is httpguts.ValidHeaderFieldName: a token
// (net/textproto lets a name with SP before the colon through; the server
// then refuses it).
func goValidHeaderFieldName(k string) bool {
	const tchars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	return k != "" && !strings.ContainsFunc(k, func(r rune) bool { return !strings.ContainsRune(tchars, r) })
}

// goValidHostHeader is golang.org/x/net/http/httpguts.ValidHostHeader,
// which net/http vendors and so cannot be imported: the bytes RFC 3986
// allows in a host and port.
func goValidHostHeader(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!$%&'()*+,-.:;=[]_~", c) >= 0) {
			return false
		}
	}
	return true
}

func FuzzDifferential(f *testing.F) {
	for _, s := range headSeeds() {
		f.Add(s)
	}
	lim := Limits{}.withDefaults()
	f.Fuzz(func(t *testing.T, b []byte) {
		ours, n, err := checkParseHead(t, b, &lim)
		goReq, goErr := goVerdict(b)
		weOK := err == nil || err == errExpectation
		goOK := goErr == nil

		if err == errNeedMore {
			if goOK {
				t.Fatalf("parseHead(%q) = errNeedMore, but net/http accepts %s %q", b, goReq.Method, goReq.RequestURI)
			}
			return
		}
		if weOK != goOK {
			dir := weAccept
			if !weOK {
				dir = weRefuse
			}
			h := splitHead(b)
			for _, e := range diffExceptions {
				if e.dir == dir && e.pred(h, b) {
					return // a deliberate difference
				}
			}
			if weOK {
				t.Fatalf("parseHead(%q) = %s, but net/http refuses it: %v (no exception applies)", b, describeHead(ours, n, err), goErr)
			}
			t.Fatalf("parseHead(%q) = %v, but net/http accepts it: %s %q Host %q (no exception applies)", b, err, goReq.Method, goReq.RequestURI, goReq.Host)
		}
		if !weOK {
			return
		}
		compareWithGo(t, b, ours, goReq)
	})
}

// compareWithGo checks that parseHead and net/http understood an accepted
// head the same way.
func compareWithGo(t *testing.T, b []byte, r *Request, g *http.Request) {
	t.Helper()
	fail := func(what string, ours, theirs any) {
		t.Helper()
		t.Fatalf("parseHead(%q): %s = %q, net/http has %q", b, what, ours, theirs)
	}
	if string(r.Method) != g.Method {
		fail("method", r.Method, g.Method)
	}
	if string(r.Target) != g.RequestURI {
		fail("target", r.Target, g.RequestURI)
	}
	if string(r.Host) != g.Host {
		// net/http takes an absolute-form authority percent-decoded.
		if !strings.Contains(string(r.Host), "%") {
			fail("host", r.Host, g.Host)
		}
	}
	if r.ProtoMinor != min(g.ProtoMinor, 1) {
		fail("minor version", r.ProtoMinor, g.ProtoMinor)
	}
	if r.Target[0] == '/' {
		// net/http decodes the path but leaves dot segments and repeated
		// slashes (its ServeMux cleans them later, by redirecting); the
		// engine's Path is the canonical path, decided before routing
		// (RFC 3986 §6.2.2). Compare with the reference model applied to
		// net/http's decoded path.
		if want, _ := refCanonical(g.URL.Path); string(r.Path) != want {
			fail("canonical path", r.Path, want)
		}
		if string(r.Query) != g.URL.RawQuery {
			fail("query", r.Query, g.URL.RawQuery)
		}
	}
	chunked := len(g.TransferEncoding) == 1 && g.TransferEncoding[0] == "chunked"
	if r.ContentLength != g.ContentLength || (r.ContentLength == -1) != chunked {
		fail("content length", r.ContentLength, g.ContentLength)
	}
	if r.close != g.Close {
		fail("close", r.close, g.Close)
	}

	// Header fields, by canonical name, values in order. net/http moves
	// Host to Request.Host, Transfer-Encoding to TransferEncoding, keeps one
	// Content-Length, and adds Cache-Control for "Pragma: no-cache".
	ourHeader := http.Header{}
	for _, f := range r.Fields {
		k := textproto.CanonicalMIMEHeaderKey(string(f.Name))
		switch k {
		case "Host", "Transfer-Encoding":
			continue
		case "Content-Length":
			if ourHeader[k] != nil {
				continue
			}
		}
		ourHeader[k] = append(ourHeader[k], string(f.Value))
	}
	goHeader := g.Header.Clone()
	delete(goHeader, "Host")
	if ourHeader["Cache-Control"] == nil && ourHeader["Pragma"] != nil {
		delete(goHeader, "Cache-Control")
	}
	for k, vs := range goHeader {
		if !slices.Equal(vs, ourHeader[k]) {
			fail("field "+k, ourHeader[k], vs)
		}
	}
	for k, vs := range ourHeader {
		if goHeader[k] == nil {
			fail("field "+k, vs, nil)
		}
	}
}
