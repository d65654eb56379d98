package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// Table tests of parseHead from raw wire bytes. Each case cites the RFC
// clause (RFC 9112 is HTTP/1.1, RFC 9110 HTTP semantics) that decides it,
// or says why the engine chose as it did where the RFCs leave a choice.

// head is an accepted request as a test expects it.
type head struct {
	method, target, rawPath, path, query, host string
	minor                                      int
	cl                                         int64 // ContentLength: -1 chunked
	close, cont                                bool  // WantsClose, expectCont
	fields                                     []string
	consumed                                   int // 0: the whole input
}

// get11 is "GET / HTTP/1.1" with "Host: a"; cases adjust a copy.
func get11(adjust ...func(*head)) *head {
	h := &head{method: "GET", target: "/", rawPath: "/", path: "/", host: "a", minor: 1}
	for _, f := range adjust {
		f(h)
	}
	return h
}

// wire joins a request line and field lines with CRLF and ends the head.
func wire(lines ...string) string { return strings.Join(lines, "\r\n") + "\r\n\r\n" }

type parseCase struct {
	name string // what is tested, with the RFC clause
	in   string
	ok   *head // accepted as this; nil: refused with err
	err  error
	lim  *Limits
}

func withCL(n int64) func(*head) { return func(h *head) { h.cl = n } }
func withFields(f ...string) func(*head) {
	return func(h *head) { h.fields = f }
}
func post11(adjust ...func(*head)) *head {
	return get11(append([]func(*head){func(h *head) { h.method = "POST" }}, adjust...)...)
}

var parseCases = []parseCase{
	// --- The simplest requests.
	{name: "minimal HTTP/1.1 GET (RFC 9112 §3)", in: wire("GET / HTTP/1.1", "Host: a"),
		ok: get11(withFields("Host: a"))},
	{name: "HTTP/1.0 without Host is fine (RFC 9112 §3.2 binds HTTP/1.1 only)", in: wire("GET / HTTP/1.0"),
		ok: get11(func(h *head) { h.minor, h.host, h.close = 0, "", true })},
	{name: "HTTP/1.2 is served as HTTP/1.1 (RFC 9110 §6.2: same major version)", in: wire("GET / HTTP/1.2", "Host: a"),
		ok: get11()},
	{name: "HTTP/1.9 likewise", in: wire("GET / HTTP/1.9", "Host: a"), ok: get11()},

	// --- Line ends.
	{name: "leading CRLFs before the request line are ignored (RFC 9112 §2.2 SHOULD)",
		in: "\r\n\r\n" + wire("GET / HTTP/1.1", "Host: a"), ok: get11()},
	{name: "leading bare LFs likewise", in: "\n\n" + wire("GET / HTTP/1.1", "Host: a"), ok: get11()},
	{name: "bare LF line ends throughout are accepted (RFC 9112 §2.2: a recipient MAY take LF for CRLF)",
		in: "GET / HTTP/1.1\nHost: a\nX: b\n\n", ok: get11(withFields("Host: a", "X: b"))},
	{name: "bare LF field line in a CRLF head: the smuggling shape (RFC 9112 §2.2, §11.2)",
		in: "GET / HTTP/1.1\r\nHost: a\nContent-Length: 5\r\n\r\n", err: errMixedEOL},
	{name: "CRLF field line in a bare-LF head (RFC 9112 §2.2, §11.2)",
		in: "GET / HTTP/1.1\nHost: a\r\n\n", err: errMixedEOL},
	{name: "bare LF ending a CRLF head (RFC 9112 §2.2, §11.2)",
		in: "GET / HTTP/1.1\r\nHost: a\r\n\n", err: errMixedEOL},
	{name: "CRLF ending a bare-LF head (RFC 9112 §2.2, §11.2)",
		in: "GET / HTTP/1.1\nHost: a\n\r\n", err: errMixedEOL},
	{name: "bare CR ends no line (RFC 9112 §2.2: MUST treat as invalid or replace with SP)",
		in: "GET / HTTP/1.1\rHost: a\r\n\r\n", err: errBareCR},
	{name: "bare CR inside a field value (RFC 9112 §2.2)",
		in: wire("GET / HTTP/1.1", "Host: a", "X: a\rb"), err: errBareCR},
	{name: "bare CR at the end of a field value (RFC 9112 §2.2)",
		in: "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\r\n\r\n", err: errBareCR},
	{name: "bare CR starting a line (RFC 9112 §2.2)",
		in: "GET / HTTP/1.1\r\nHost: a\r\n\rX: b\r\n\r\n", err: errBareCR},
	{name: "CR CR LF as the empty line (RFC 9112 §2.2)",
		in: "GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", err: errBareCR},
	{name: "bare CR in an unfinished request line, refused without waiting (RFC 9112 §2.2)",
		in: "GET / HTTP/1.1\rHost: a", err: errBareCR},
	{name: "bare CR before an unfinished request line (RFC 9112 §2.2)", in: "\rGET", err: errBareCR},
	{name: "bare CR in an unfinished field line, refused without waiting (RFC 9112 §2.2)",
		in: "GET / HTTP/1.1\r\nHost: a\rb", err: errBareCR},
	{name: "a CR ending what has arrived may be a CRLF's (RFC 9112 §2.2)", in: "GET / HTTP/1.1\r\nHost: a\r", err: errNeedMore},
	{name: "bare CR in the request line (RFC 9112 §2.2)",
		in: "GET / HTTP/1.1\r\r\nHost: a\r\n\r\n", err: errBareCR},

	// --- Request line (RFC 9112 §3: method SP request-target SP HTTP-version).
	{name: "two spaces after the method (RFC 9112 §3)", in: wire("GET  / HTTP/1.1", "Host: a"), err: errRequestLine},
	{name: "two spaces before the version (RFC 9112 §3)", in: wire("GET /  HTTP/1.1", "Host: a"), err: errVersion},
	{name: "leading space (RFC 9112 §3)", in: wire(" GET / HTTP/1.1", "Host: a"), err: errRequestLine},
	{name: "trailing space after the version (RFC 9112 §3)", in: wire("GET / HTTP/1.1 ", "Host: a"), err: errVersion},
	{name: "HTAB as separator (RFC 9112 §3: SP only)", in: wire("GET\t/ HTTP/1.1", "Host: a"), err: errMethod},
	{name: "missing version: HTTP/0.9 simple request (RFC 9112 §3, Appendix C.1)", in: wire("GET /"), err: errRequestLine},
	{name: "missing version after SP (RFC 9112 §2.3)", in: wire("GET / ", "Host: a"), err: errVersion},
	{name: "method only (RFC 9112 §3)", in: wire("GET"), err: errRequestLine},
	{name: "empty request line after the skipped empty lines is the end of input", in: "\r\n", err: errNeedMore},
	{name: "lowercase http/1.1 (RFC 9112 §2.3: HTTP-name is case-sensitive)", in: wire("GET / http/1.1", "Host: a"), err: errVersion},
	{name: "HTTP/1.10 (RFC 9112 §2.3: one DIGIT each)", in: wire("GET / HTTP/1.10", "Host: a"), err: errVersion},
	{name: "HTTP/1 (RFC 9112 §2.3)", in: wire("GET / HTTP/1", "Host: a"), err: errVersion},
	{name: "HTTP/1.x (RFC 9112 §2.3)", in: wire("GET / HTTP/1.x", "Host: a"), err: errVersion},
	{name: "HTTP/2.0 → 505 (RFC 9110 §15.6.6)", in: wire("GET / HTTP/2.0", "Host: a"), err: errHTTPVersion},
	{name: "HTTP/0.9 → 505 (RFC 9110 §15.6.6)", in: wire("GET / HTTP/0.9", "Host: a"), err: errHTTPVersion},
	{name: "HTTP/3.0 → 505 (RFC 9110 §15.6.6)", in: wire("GET / HTTP/3.0", "Host: a"), err: errHTTPVersion},
	{name: "RTSP/1.0 is not HTTP (RFC 9112 §2.3)", in: wire("OPTIONS * RTSP/1.0", "Host: a"), err: errVersion},
	{name: "method with a non-tchar (RFC 9110 §9.1: method = token)", in: wire("G(T / HTTP/1.1", "Host: a"), err: errMethod},
	{name: "method with NUL (RFC 9110 §9.1)", in: wire("G\x00T / HTTP/1.1", "Host: a"), err: errMethod},
	{name: "lowercase method parses; 501 is conn's policy (RFC 9110 §9.1: case-sensitive token)",
		in: wire("get / HTTP/1.1", "Host: a"), ok: get11(func(h *head) { h.method = "get" })},
	{name: "extension method parses (RFC 9110 §9.1)", in: wire("PROPFIND / HTTP/1.1", "Host: a"),
		ok: get11(func(h *head) { h.method = "PROPFIND" })},

	// --- Request target (RFC 9112 §3.2).
	{name: "origin-form with query (RFC 9112 §3.2.1)", in: wire("GET /p/q?x=1&y HTTP/1.1", "Host: a"),
		ok: get11(func(h *head) { h.target, h.rawPath, h.path, h.query = "/p/q?x=1&y", "/p/q", "/p/q", "x=1&y" })},
	{name: "empty query (RFC 9112 §3.2.1)", in: wire("GET /p? HTTP/1.1", "Host: a"),
		ok: get11(func(h *head) { h.target, h.rawPath, h.path = "/p?", "/p", "/p" })},
	{name: "fragment in the target (RFC 9112 §3.2.1: no '#'; RFC 9110 §7.1)", in: wire("GET /p#f HTTP/1.1", "Host: a"), err: errTarget},
	{name: "control byte in the target (RFC 3986 §2)", in: wire("GET /\x01 HTTP/1.1", "Host: a"), err: errTarget},
	{name: "DEL in the target (RFC 3986 §2)", in: wire("GET /\x7f HTTP/1.1", "Host: a"), err: errTarget},
	{name: "non-ASCII byte in the target (RFC 3986 §2)", in: wire("GET /\xc3\xa9 HTTP/1.1", "Host: a"), err: errTarget},
	{name: "space in the target splits the line wrongly (RFC 9112 §3.2)", in: wire("GET /a b HTTP/1.1", "Host: a"), err: errVersion},
	{name: "relative target (RFC 9112 §3.2)", in: wire("GET p HTTP/1.1", "Host: a"), err: errTarget},
	{name: "absolute-form: Host comes from the target, and replaces the Host field (RFC 9112 §3.2.2)",
		in: wire("GET http://example.com:8080/p?q HTTP/1.1", "X: 1", "Host: other", "Y: 2"),
		ok: get11(withFields("X: 1", "Host: example.com:8080", "Y: 2"), func(h *head) {
			h.target, h.rawPath, h.path, h.query, h.host = "http://example.com:8080/p?q", "/p", "/p", "q", "example.com:8080"
		})},
	{name: "absolute-form: the Host field ignored must still be valid (RFC 9112 §3.2: MUST 400)",
		in: wire("GET http://example.com/ HTTP/1.1", "Host: a/b"), err: errBadHost},
	{name: "absolute-form: the Host field ignored must still be single (RFC 9112 §3.2: MUST 400)",
		in: wire("GET http://example.com/ HTTP/1.1", "Host: example.com", "Host: example.com"), err: errDupHost},
	{name: "absolute-form with empty path is \"/\" (RFC 9112 §3.2.2, RFC 9110 §4.2.3)",
		in: wire("GET http://example.com HTTP/1.1", "Host: example.com"),
		ok: get11(func(h *head) { h.target, h.host = "http://example.com", "example.com" })},
	{name: "absolute-form with query and no path (RFC 9110 §4.2.3)",
		in: wire("GET http://example.com?x=1 HTTP/1.1", "Host: example.com"),
		ok: get11(func(h *head) { h.target, h.host, h.query = "http://example.com?x=1", "example.com", "x=1" })},
	{name: "absolute-form https, scheme case-insensitive (RFC 3986 §3.1)",
		in: wire("GET HTTPS://h/x HTTP/1.1", "Host: h"),
		ok: get11(func(h *head) { h.target, h.host, h.rawPath, h.path = "HTTPS://h/x", "h", "/x", "/x" })},
	{name: "absolute-form still needs the Host field (RFC 9112 §3.2)", in: wire("GET http://h/ HTTP/1.1"), err: errNoHost},
	{name: "absolute-form with userinfo (RFC 9110 §4.2.4: SHOULD treat as an error)",
		in: wire("GET http://u:p@h/ HTTP/1.1", "Host: h"), err: errTarget},
	{name: "absolute-form with empty host (RFC 9110 §4.2.1: MUST reject)", in: wire("GET http:///p HTTP/1.1", "Host: h"), err: errTarget},
	{name: "absolute-form of another scheme (RFC 9112 §3.2.2: http and https here)", in: wire("GET ftp://h/ HTTP/1.1", "Host: h"), err: errTarget},
	{name: "scheme only (RFC 9110 §4.2.1)", in: wire("GET http:// HTTP/1.1", "Host: h"), err: errTarget},
	{name: "authority-form for CONNECT (RFC 9112 §3.2.3)",
		in: wire("CONNECT example.com:443 HTTP/1.1", "Host: example.com:443"),
		ok: &head{method: "CONNECT", target: "example.com:443", host: "example.com:443", minor: 1}},
	{name: "authority-form: Host comes from the target, and replaces the Host field (RFC 9112 §3.2.3, §3.2.2)",
		in: wire("CONNECT example.com:443 HTTP/1.1", "Host: other:80"),
		ok: &head{method: "CONNECT", target: "example.com:443", host: "example.com:443", minor: 1, fields: []string{"Host: example.com:443"}}},
	{name: "authority-form with IP-literal (RFC 9112 §3.2.3, RFC 3986 §3.2.2)",
		in: wire("CONNECT [::1]:443 HTTP/1.1", "Host: [::1]:443"),
		ok: &head{method: "CONNECT", target: "[::1]:443", host: "[::1]:443", minor: 1}},
	{name: "authority-form without port (RFC 9112 §3.2.3: uri-host \":\" port)",
		in: wire("CONNECT example.com HTTP/1.1", "Host: example.com"), err: errTarget},
	{name: "authority-form with non-digit port (RFC 3986 §3.2.3)",
		in: wire("CONNECT example.com:https HTTP/1.1", "Host: example.com"), err: errTarget},
	{name: "authority-form with userinfo (RFC 9112 §3.2.3)",
		in: wire("CONNECT u@example.com:443 HTTP/1.1", "Host: example.com"), err: errTarget},
	{name: "authority-form with a bad IP-literal (RFC 3986 §3.2.2)", in: wire("CONNECT [0]:443 HTTP/1.1", "Host: a"), err: errTarget},
	{name: "absolute-form with empty host and a port (RFC 9110 §4.2.1)", in: wire("GET http://:80/ HTTP/1.1", "Host: a"), err: errTarget},
	{name: "absolute-form with a bad IP-literal (RFC 3986 §3.2.2)", in: wire("GET http://[x]/ HTTP/1.1", "Host: a"), err: errTarget},
	{name: "authority-form with empty host (RFC 9112 §3.2.3)", in: wire("CONNECT :443 HTTP/1.1", "Host: a"), err: errTarget},
	{name: "CONNECT with origin-form (RFC 9110 §9.3.6: authority-form only)", in: wire("CONNECT / HTTP/1.1", "Host: a"), err: errTarget},
	{name: "CONNECT with absolute-form (RFC 9110 §9.3.6)", in: wire("CONNECT http://h:80/ HTTP/1.1", "Host: a"), err: errTarget},
	{name: "authority-form with another method (RFC 9112 §3.2.3: only CONNECT)", in: wire("GET example.com:443 HTTP/1.1", "Host: a"), err: errTarget},
	{name: "OPTIONS * (RFC 9112 §3.2.4)", in: wire("OPTIONS * HTTP/1.1", "Host: a"),
		ok: get11(func(h *head) { h.method, h.target, h.rawPath, h.path = "OPTIONS", "*", "*", "*" })},
	{name: "asterisk-form with GET (RFC 9112 §3.2.4: only OPTIONS)", in: wire("GET * HTTP/1.1", "Host: a"), err: errTarget},
	{name: "asterisk-form with query (RFC 9112 §3.2.4)", in: wire("OPTIONS *?x HTTP/1.1", "Host: a"), err: errTarget},

	// --- Percent-decoding of the path (RFC 3986 §2.1).
	{name: "path is made canonical, raw path and target kept", in: wire("GET /a%20b/./%41//c?q=%zz HTTP/1.1", "Host: a"),
		ok: get11(func(h *head) {
			h.target, h.rawPath, h.path, h.query = "/a%20b/./%41//c?q=%zz", "/a%20b/./%41//c", "/a b/A/c", "q=%zz"
		})},
	{name: "encoded slash is refused (RFC 3986 §2.2)", in: wire("GET /a%20b/%41%2fc HTTP/1.1", "Host: a"), err: errPathSlash},
	{name: "decoded NUL is refused (confinement of file paths)", in: wire("GET /a%00b HTTP/1.1", "Host: a"), err: errPathNUL},
	{name: "bad escape digit (RFC 3986 §2.1)", in: wire("GET /a%zz HTTP/1.1", "Host: a"), err: errPathEncoding},
	{name: "truncated escape (RFC 3986 §2.1)", in: wire("GET /a%4 HTTP/1.1", "Host: a"), err: errPathEncoding},
	{name: "lone percent (RFC 3986 §2.1)", in: wire("GET /a% HTTP/1.1", "Host: a"), err: errPathEncoding},
	{name: "escape at the very end (RFC 3986 §2.1)", in: wire("GET /%41 HTTP/1.1", "Host: a"),
		ok: get11(func(h *head) { h.target, h.rawPath, h.path = "/%41", "/%41", "/A" })},
	{name: "absolute-form path is decoded too", in: wire("GET http://h/%7e HTTP/1.1", "Host: h"),
		ok: get11(func(h *head) { h.target, h.rawPath, h.path, h.host = "http://h/%7e", "/%7e", "/~", "h" })},

	// --- Field lines (RFC 9112 §5, RFC 9110 §5).
	{name: "field value OWS is trimmed, inner kept (RFC 9112 §5.1)", in: wire("GET / HTTP/1.1", "Host: a", "X: \t a  b \t"),
		ok: get11(withFields("Host: a", "X: a  b"))},
	{name: "empty field value (RFC 9110 §5.5)", in: wire("GET / HTTP/1.1", "Host: a", "X:", "Y: "),
		ok: get11(withFields("Host: a", "X: ", "Y: "))},
	{name: "HTAB inside a value (RFC 9110 §5.5)", in: wire("GET / HTTP/1.1", "Host: a", "X: a\tb"),
		ok: get11(withFields("Host: a", "X: a\tb"))},
	{name: "obs-text in a value (RFC 9110 §5.5)", in: wire("GET / HTTP/1.1", "Host: a", "X: caf\xe9"),
		ok: get11(withFields("Host: a", "X: caf\xe9"))},
	{name: "colon in a value", in: wire("GET / HTTP/1.1", "Host: a", "X: a:b"),
		ok: get11(withFields("Host: a", "X: a:b"))},
	{name: "field names keep their case; Host matched case-insensitively (RFC 9110 §5.1)",
		in: wire("GET / HTTP/1.1", "hOsT: a", "x-Y: 1"), ok: get11(withFields("hOsT: a", "x-Y: 1"))},
	{name: "SP before colon (RFC 9112 §5.1: MUST reject with 400)", in: wire("GET / HTTP/1.1", "Host : a"), err: errSpaceBeforeColon},
	{name: "HTAB before colon (RFC 9112 §5.1)", in: wire("GET / HTTP/1.1", "Host: a", "X\t: b"), err: errSpaceBeforeColon},
	{name: "SP inside a name (RFC 9110 §5.1: field-name = token)", in: wire("GET / HTTP/1.1", "Host: a", "X Y: b"), err: errFieldName},
	{name: "obs-fold (RFC 9112 §5.2: reject with 400)", in: wire("GET / HTTP/1.1", "Host: a", "X: b", " c"), err: errObsFold},
	{name: "obs-fold with HTAB (RFC 9112 §5.2)", in: wire("GET / HTTP/1.1", "Host: a", "X: b", "\tc"), err: errObsFold},
	{name: "whitespace line before the first field (RFC 9112 §2.2)", in: wire("GET / HTTP/1.1", " Host: a"), err: errObsFold},
	{name: "obs-fold refused before its line ends (RFC 9112 §5.2)", in: "GET / HTTP/1.1\r\nHost: a\r\n ", err: errObsFold},
	{name: "line without colon (RFC 9112 §5)", in: wire("GET / HTTP/1.1", "Host: a", "NoColon"), err: errNoColon},
	{name: "empty field name (RFC 9110 §5.1)", in: wire("GET / HTTP/1.1", "Host: a", ": b"), err: errFieldName},
	{name: "NUL in a name (RFC 9110 §5.1)", in: wire("GET / HTTP/1.1", "Host: a", "X\x00Y: b"), err: errFieldName},
	{name: "CR in a name (RFC 9110 §5.1)", in: wire("GET / HTTP/1.1", "Host: a", "X\rY: b"), err: errFieldName},
	{name: "DEL in a name (RFC 9110 §5.1)", in: wire("GET / HTTP/1.1", "Host: a", "X\x7fY: b"), err: errFieldName},
	{name: "'(' in a name (RFC 9110 §5.6.2: not a tchar)", in: wire("GET / HTTP/1.1", "Host: a", "X(Y: b"), err: errFieldName},
	{name: "'@' in a name (RFC 9110 §5.6.2)", in: wire("GET / HTTP/1.1", "Host: a", "X@Y: b"), err: errFieldName},
	{name: "'/' in a name (RFC 9110 §5.6.2)", in: wire("GET / HTTP/1.1", "Host: a", "X/Y: b"), err: errFieldName},
	{name: "'\"' in a name (RFC 9110 §5.6.2)", in: wire("GET / HTTP/1.1", "Host: a", "X\"Y: b"), err: errFieldName},
	{name: "non-ASCII in a name (RFC 9110 §5.6.2)", in: wire("GET / HTTP/1.1", "Host: a", "X\xe9: b"), err: errFieldName},
	{name: "all tchars in a name (RFC 9110 §5.6.2)", in: wire("GET / HTTP/1.1", "Host: a", "!#$%&'*+-.^_`|~09azAZ: b"),
		ok: get11(withFields("Host: a", "!#$%&'*+-.^_`|~09azAZ: b"))},
	{name: "NUL in a value (RFC 9110 §5.5: MUST reject or replace)", in: wire("GET / HTTP/1.1", "Host: a", "X: a\x00b"), err: errFieldValue},
	{name: "control byte in a value (RFC 9110 §5.5)", in: wire("GET / HTTP/1.1", "Host: a", "X: a\x01b"), err: errFieldValue},
	{name: "ESC in a value (RFC 9110 §5.5)", in: wire("GET / HTTP/1.1", "Host: a", "X: \x1b[0m"), err: errFieldValue},
	{name: "form feed in a value (RFC 9110 §5.5)", in: wire("GET / HTTP/1.1", "Host: a", "X: a\fb"), err: errFieldValue},
	{name: "DEL in a value (RFC 9110 §5.5)", in: wire("GET / HTTP/1.1", "Host: a", "X: a\x7fb"), err: errFieldValue},

	// --- Host (RFC 9112 §3.2).
	{name: "missing Host in HTTP/1.1 (RFC 9112 §3.2: MUST 400)", in: wire("GET / HTTP/1.1", "X: a"), err: errNoHost},
	{name: "two Host lines (RFC 9112 §3.2: MUST 400)", in: wire("GET / HTTP/1.1", "Host: a", "Host: b"), err: errDupHost},
	{name: "two identical Host lines (RFC 9112 §3.2: more than one line)", in: wire("GET / HTTP/1.1", "Host: a", "host: a"), err: errDupHost},
	{name: "duplicate Host in HTTP/1.0 too (RFC 9112 §3.2: any request message)", in: wire("GET / HTTP/1.0", "Host: a", "Host: b"), err: errDupHost},
	{name: "SP in Host (RFC 9112 §3.2: invalid field value)", in: wire("GET / HTTP/1.1", "Host: a b"), err: errBadHost},
	{name: "'/' in Host (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: a/b"), err: errBadHost},
	{name: "userinfo in Host (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: u@a"), err: errBadHost},
	{name: "'#' in Host (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: a#b"), err: errBadHost},
	{name: "obs-text in Host (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: caf\xe9"), err: errBadHost},
	{name: "two colons in Host (RFC 3986 §3.2.2: reg-name has none)", in: wire("GET / HTTP/1.1", "Host: a:1:2"), err: errBadHost},
	{name: "non-digit port in Host (RFC 3986 §3.2.3)", in: wire("GET / HTTP/1.1", "Host: a:8x"), err: errBadHost},
	{name: "bad pct-encoding in Host (RFC 3986 §2.1)", in: wire("GET / HTTP/1.1", "Host: a%zz"), err: errBadHost},
	{name: "brackets inside a reg-name (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: a[b]"), err: errBadHost},
	{name: "empty label in Host (as nginx)", in: wire("GET / HTTP/1.1", "Host: secret.example.."), err: errBadHost},
	{name: "empty label inside Host (as nginx)", in: wire("GET / HTTP/1.1", "Host: a..b:80"), err: errBadHost},
	{name: "Host of a dot (as nginx)", in: wire("GET / HTTP/1.1", "Host: ."), err: errBadHost},
	{name: "Host with a leading dot (as nginx)", in: wire("GET / HTTP/1.1", "Host: .a"), err: errBadHost},
	{name: "empty label in an absolute-form authority", in: wire("GET http://a..b/ HTTP/1.1", "Host: x"), err: errTarget},
	{name: "absolute Host name (one trailing dot)", in: wire("GET / HTTP/1.1", "Host: a.example."),
		ok: get11(func(h *head) { h.host = "a.example." })},
	{name: "IP-literal that is not IPv6 (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: [0]"), err: errBadHost},
	{name: "unclosed IP-literal (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: [::1"), err: errBadHost},
	{name: "junk after an IP-literal (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: [::1]x"), err: errBadHost},
	{name: "IPvFuture (RFC 3986 §3.2.2: unknown version flag is an error)", in: wire("GET / HTTP/1.1", "Host: [v1.x]"), err: errBadHost},
	{name: "IPv4 and port in Host (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: 192.0.2.1:80"),
		ok: get11(func(h *head) { h.host = "192.0.2.1:80" })},
	{name: "IPv6 with zone (RFC 6874)", in: wire("GET / HTTP/1.1", "Host: [fe80::1%25en0]:80"),
		ok: get11(func(h *head) { h.host = "[fe80::1%25en0]:80" })},
	{name: "pct-encoded UTF-8 in a reg-name, empty port (RFC 3986 §3.2.2, §3.2.3)", in: wire("GET / HTTP/1.1", "Host: caf%C3%A9:"),
		ok: get11(func(h *head) { h.host = "caf%C3%A9:" })},
	{name: "pct-encoded ASCII in Host (RFC 3986 §3.2.2: only for UTF-8 octets)", in: wire("GET / HTTP/1.1", "Host: %41"), err: errBadHost},
	{name: "pct-encoded NUL in an absolute-form host (RFC 3986 §3.2.2)", in: wire("GET http://a%00/ HTTP/1.1", "Host: a"), err: errTarget},
	{name: "empty Host (RFC 9112 §3.2: empty when the authority is missing)", in: wire("GET / HTTP/1.1", "Host:"),
		ok: get11(func(h *head) { h.host = "" })},
	{name: "Host with port and IP-literal (RFC 3986 §3.2.2)", in: wire("GET / HTTP/1.1", "Host: [::1]:8080"),
		ok: get11(func(h *head) { h.host = "[::1]:8080" })},

	// --- Content-Length (RFC 9110 §8.6, RFC 9112 §6.3).
	{name: "Content-Length (RFC 9112 §6.3 item 6)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 5") + "hello",
		ok: post11(withCL(5), func(h *head) { h.consumed = -5 })},
	{name: "Content-Length 0", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 0"), ok: post11()},
	{name: "Content-Length with leading zeros is decimal (RFC 9110 §8.6: 1*DIGIT)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 007"),
		ok: post11(withCL(7))},
	{name: "Content-Length with OWS (RFC 9112 §5.1)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: \t5 "), ok: post11(withCL(5))},
	{name: "Content-Length of MaxInt64", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 9223372036854775807"),
		ok: post11(withCL(math.MaxInt64))},
	{name: "identical duplicate Content-Length (RFC 9110 §8.6 MAY accept; as net/http)",
		in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 5", "Content-Length: 5"), ok: post11(withCL(5))},
	{name: "conflicting Content-Length (RFC 9112 §6.3 item 5: MUST 400)",
		in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 5", "Content-Length: 6"), err: errDupLength},
	{name: "Content-Length list in one line (RFC 9112 §6.3 item 5: refused as invalid)",
		in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 5, 5"), err: errContentLength},
	{name: "Content-Length +5 (RFC 9110 §8.6: 1*DIGIT)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: +5"), err: errContentLength},
	{name: "Content-Length -1 (RFC 9110 §8.6)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: -1"), err: errContentLength},
	{name: "Content-Length 1 2 (RFC 9110 §8.6)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 1 2"), err: errContentLength},
	{name: "empty Content-Length (RFC 9110 §8.6)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length:"), err: errContentLength},
	{name: "hex Content-Length (RFC 9110 §8.6)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 0x5"), err: errContentLength},
	{name: "Content-Length 5a (RFC 9110 §8.6)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 5a"), err: errContentLength},
	{name: "Content-Length overflow (RFC 9110 §8.6: anticipate large numerals, prevent overflow)",
		in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 9223372036854775808"), err: errContentLength},
	{name: "Content-Length far overflow", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 1000000000000000000000"), err: errContentLength},
	{name: "bad Content-Length after a good one (RFC 9110 §8.6)",
		in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 5", "Content-Length: x"), err: errContentLength},

	// --- Transfer-Encoding (RFC 9112 §6.1, §6.3, §7).
	{name: "chunked (RFC 9112 §6.3 item 4)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked"), ok: post11(withCL(-1))},
	{name: "Chunked, case-insensitive (RFC 9112 §7)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: CHUNKED"), ok: post11(withCL(-1))},
	{name: "empty list elements are ignored (RFC 9110 §5.6.1)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: , chunked ,"),
		ok: post11(withCL(-1))},
	{name: "CL and TE (RFC 9112 §6.3 item 3, §6.1: smuggling; refused)",
		in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 5", "Transfer-Encoding: chunked"), err: errCLAndTE},
	{name: "TE and CL, other order (RFC 9112 §6.3 item 3)",
		in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked", "Content-Length: 5"), err: errCLAndTE},
	{name: "chunked not final (RFC 9112 §6.3 item 4: MUST 400)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked, gzip"), err: errTENotChunked},
	{name: "chunked not final across lines (RFC 9112 §6.3 item 4)",
		in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked", "Transfer-Encoding: gzip"), err: errTENotChunked},
	{name: "gzip alone (RFC 9112 §6.3 item 4)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: gzip"), err: errTENotChunked},
	{name: "identity is not a transfer coding any more (RFC 9112 §6.3 item 4)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: identity"), err: errTENotChunked},
	{name: "chunked with a parameter is not chunked (RFC 9112 §7: no parameters)",
		in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked;q=1"), err: errTENotChunked},
	{name: "chunked twice (RFC 9112 §6.1: MUST NOT apply chunked more than once)",
		in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked, chunked"), err: errTEChunkedTwice},
	{name: "chunked twice across lines (RFC 9112 §6.1)",
		in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked"), err: errTEChunkedTwice},
	{name: "unknown coding before chunked → 501 (RFC 9112 §6.1 SHOULD 501)",
		in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: gzip, chunked"), err: errUnknownTE},
	{name: "unknown coding line before chunked line → 501 (RFC 9112 §6.1)",
		in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: deflate", "Transfer-Encoding: chunked"), err: errUnknownTE},
	{name: "empty Transfer-Encoding (RFC 9112 §6.1: 1#transfer-coding)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding:"), err: errTEMalformed},
	{name: "Transfer-Encoding of commas only (RFC 9110 §5.6.1)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: ,,"), err: errTEMalformed},
	{name: "coding that is not a token (RFC 9112 §6.1)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: g zip, chunked"), err: errTEMalformed},
	{name: "chunkedchunked is an unknown coding (RFC 9112 §6.3 item 4)", in: wire("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunkedchunked"), err: errTENotChunked},
	{name: "TE in HTTP/1.0 (RFC 9112 §6.1: MUST treat the framing as faulty)",
		in: wire("POST / HTTP/1.0", "Transfer-Encoding: chunked"), err: errTEHTTP10},
	{name: "TE and CL in HTTP/1.0 (RFC 9112 §6.1: even if a Content-Length is present)",
		in: wire("POST / HTTP/1.0", "Transfer-Encoding: chunked", "Content-Length: 5"), err: errTEHTTP10},

	// --- Expect (RFC 9110 §10.1.1).
	{name: "Expect: 100-continue (RFC 9110 §10.1.1)", in: wire("POST / HTTP/1.1", "Host: a", "Content-Length: 5", "Expect: 100-continue"),
		ok: post11(withCL(5), func(h *head) { h.cont = true })},
	{name: "Expect is case-insensitive (RFC 9110 §10.1.1)", in: wire("POST / HTTP/1.1", "Host: a", "Expect: 100-Continue"),
		ok: post11(func(h *head) { h.cont = true })},
	{name: "unknown expectation → 417 after the head (RFC 9110 §10.1.1 MAY 417)",
		in: wire("POST / HTTP/1.1", "Host: a", "Expect: the-unexpected"), err: errExpectation},
	{name: "empty Expect lists no expectation (RFC 9110 §10.1.1: Expect = #expectation)", in: wire("GET / HTTP/1.1", "Host: a", "Expect:"),
		ok: get11()},
	{name: "an unknown expectation in a list with 100-continue → 417 (RFC 9110 §10.1.1)",
		in: wire("POST / HTTP/1.1", "Host: a", "Expect: 100-continue, foo"), err: errExpectation},
	{name: "an unknown expectation on an earlier Expect line → 417 (RFC 9110 §5.3: one list)",
		in: wire("POST / HTTP/1.1", "Host: a", "Expect: foo", "Expect: 100-continue"), err: errExpectation},
	{name: "an unknown expectation on a later Expect line → 417 (RFC 9110 §5.3: one list)",
		in: wire("POST / HTTP/1.1", "Host: a", "Expect: 100-continue", "Expect: foo"), err: errExpectation},
	{name: "100-continue listed twice, empty elements ignored (RFC 9110 §5.3, §5.6.1)",
		in: wire("POST / HTTP/1.1", "Host: a", "Expect: 100-continue, ,100-Continue", "Expect: ,", "Expect: 100-continue"),
		ok: post11(func(h *head) { h.cont = true })},
	{name: "Expect in HTTP/1.0 is ignored (RFC 9110 §10.1.1: MUST ignore)", in: wire("POST / HTTP/1.0", "Expect: 100-continue"),
		ok: post11(func(h *head) { h.minor, h.host, h.close = 0, "", true })},

	// --- Connection (RFC 9112 §9.3).
	{name: "HTTP/1.1 persists by default (RFC 9112 §9.3)", in: wire("GET / HTTP/1.1", "Host: a"), ok: get11()},
	{name: "HTTP/1.1 close (RFC 9112 §9.6)", in: wire("GET / HTTP/1.1", "Host: a", "Connection: close"),
		ok: get11(func(h *head) { h.close = true })},
	{name: "close in a list, any case (RFC 9110 §7.6.1)", in: wire("GET / HTTP/1.1", "Host: a", "Connection: keep-alive, Close"),
		ok: get11(func(h *head) { h.close = true })},
	{name: "close on a second Connection line (RFC 9110 §5.3)", in: wire("GET / HTTP/1.1", "Host: a", "Connection: x", "Connection: close"),
		ok: get11(func(h *head) { h.close = true })},
	{name: "closed is not close (RFC 9110 §7.6.1)", in: wire("GET / HTTP/1.1", "Host: a", "Connection: closed"), ok: get11()},
	{name: "HTTP/1.0 closes by default (RFC 9112 §9.3)", in: wire("GET / HTTP/1.0", "Host: a"),
		ok: get11(func(h *head) { h.minor, h.close = 0, true })},
	{name: "HTTP/1.0 keep-alive persists (RFC 9112 Appendix C.2.2)", in: wire("GET / HTTP/1.0", "Host: a", "Connection: Keep-Alive"),
		ok: get11(func(h *head) { h.minor = 0 })},
	{name: "HTTP/1.0 keep-alive and close closes (RFC 9112 §9.3)", in: wire("GET / HTTP/1.0", "Host: a", "Connection: keep-alive, close"),
		ok: get11(func(h *head) { h.minor, h.close = 0, true })},

	// --- What follows the head is not consumed.
	{name: "pipelined requests: one head at a time (RFC 9112 §9.3.2)",
		in: wire("GET /1 HTTP/1.1", "Host: a") + wire("GET /2 HTTP/1.1", "Host: a"),
		ok: get11(func(h *head) {
			h.target, h.rawPath, h.path, h.consumed = "/1", "/1", "/1", -len(wire("GET /2 HTTP/1.1", "Host: a"))
		})},
	{name: "incomplete head (RFC 9112 §2.1)", in: "GET / HTTP/1.1\r\nHost: a\r\n", err: errNeedMore},
	{name: "empty input", in: "", err: errNeedMore},

	// --- Limits: 414 (RFC 9110 §15.5.15), 431 (RFC 6585 §5).
	{name: "target at the limit", in: wire("GET /"+strings.Repeat("a", 62)+" HTTP/1.1", "Host: a"), lim: &smallLimits,
		ok: get11(func(h *head) {
			h.target = "/" + strings.Repeat("a", 62)
			h.rawPath, h.path = h.target, h.target
		})},
	{name: "target over the limit → 414", in: wire("GET /"+strings.Repeat("a", 64)+" HTTP/1.1", "Host: a"), lim: &smallLimits, err: errTargetTooLong},
	{name: "target over the limit → 414 before the line ends", in: "GET /" + strings.Repeat("a", 200), lim: &smallLimits, err: errTargetTooLong},
	{name: "target over the limit, version missing → 414", in: wire("GET /" + strings.Repeat("a", 64)), lim: &smallLimits, err: errTargetTooLong},
	{name: "head over the limit → 431", in: wire("GET / HTTP/1.1", "Host: a", "X: "+strings.Repeat("b", 256)), lim: &smallLimits, err: errHeaderTooLarge},
	{name: "head over the limit → 431 before it ends", in: "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("b", 300), lim: &smallLimits, err: errHeaderTooLarge},
	{name: "many short lines over the limit → 431", in: wire("GET / HTTP/1.1", "Host: a", "X: "+strings.Repeat("b", 100), "Y: "+strings.Repeat("c", 100), "Z: "+strings.Repeat("d", 100)),
		lim: &Limits{MaxHeaderBytes: 256, MaxTargetBytes: 64}, err: errHeaderTooLarge},
	{name: "fields at the count limit", in: wire("GET / HTTP/1.1", "Host: a", "X: 1", "X: 2"), lim: &smallLimits, ok: get11()},
	{name: "too many fields → 431", in: wire("GET / HTTP/1.1", "Host: a", "X: 1", "X: 2", "X: 3"), lim: &smallLimits, err: errTooManyFields},
	{name: "over-long method with no target → 400", in: strings.Repeat("A", 300), lim: &smallLimits, err: errRequestLine},
}

// smallLimits makes the size limits easy to reach: a 64-byte target,
// a 256-byte head and 3 fields.
var smallLimits = Limits{MaxTargetBytes: 64, MaxHeaderBytes: 256, MaxHeaderCount: 3}

func runParseHead(in []byte, lim *Limits) (*Request, int, error) {
	l := Limits{}
	if lim != nil {
		l = *lim
	}
	l = l.withDefaults()
	req := &Request{}
	var pathBuf []byte
	n, err := parseHead(in, req, &l, &pathBuf)
	return req, n, err
}

func describeHead(r *Request, n int, err error) string {
	if err != nil {
		return fmt.Sprintf("%d, %v", n, err)
	}
	fields := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		fields[i] = string(f.Name) + ": " + string(f.Value)
	}
	return fmt.Sprintf("%d, {%s %q raw %q path %q query %q host %q 1.%d cl %d close %v cont %v fields %q}",
		n, r.Method, r.Target, r.RawPath, r.Path, r.Query, r.Host, r.ProtoMinor, r.ContentLength, r.close, r.expectCont, fields)
}

func TestParseHead(t *testing.T) {
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			req, n, err := runParseHead([]byte(c.in), c.lim)
			if c.ok == nil {
				if err != c.err {
					t.Errorf("parseHead(%q) = %s, want %v", c.in, describeHead(req, n, err), c.err)
				}
				if c.err == errExpectation && n != len(c.in) {
					t.Errorf("parseHead(%q) consumed %d, want %d with %v", c.in, n, len(c.in), c.err)
				} else if c.err != errExpectation && n != 0 {
					t.Errorf("parseHead(%q) consumed %d with %v, want 0", c.in, n, err)
				}
				return
			}
			w := c.ok
			want := len(c.in)
			if w.consumed < 0 {
				want += w.consumed
			}
			var fields []string
			for _, f := range req.Fields {
				fields = append(fields, string(f.Name)+": "+string(f.Value))
			}
			bad := err != nil || n != want ||
				string(req.Method) != w.method || string(req.Target) != w.target ||
				string(req.RawPath) != w.rawPath || string(req.Path) != w.path ||
				string(req.Query) != w.query || string(req.Host) != w.host || req.Host == nil ||
				req.ProtoMinor != w.minor || req.ContentLength != w.cl ||
				req.close != w.close || req.expectCont != w.cont ||
				w.fields != nil && strings.Join(fields, "\n") != strings.Join(w.fields, "\n")
			if bad {
				t.Errorf("parseHead(%q) = %s,\nwant %d, {%s %q raw %q path %q query %q host %q 1.%d cl %d close %v cont %v fields %q}",
					c.in, describeHead(req, n, err), want, w.method, w.target, w.rawPath, w.path, w.query, w.host, w.minor, w.cl, w.close, w.cont, w.fields)
			}
		})
	}
}

// TestParseHeadPrefixes checks that every proper prefix of a valid head
// asks for more bytes (consuming nothing), and that the head parses the
// same at every split of its bytes into a first read and the rest.
func TestParseHeadPrefixes(t *testing.T) {
	valid := []string{
		wire("GET / HTTP/1.1", "Host: a"),
		"\r\n" + wire("POST /a%20b?x=1 HTTP/1.1", "Host: example.com", "Content-Length: 5", "X:  spaced  ", "Expect: 100-continue"),
		"GET / HTTP/1.1\nHost: a\nX: b\n\n",
		wire("GET http://h:1/p HTTP/1.1", "Host: x", "Transfer-Encoding: gzip, chunked"), // 501, but only once complete
		wire("CONNECT h:443 HTTP/1.0"),
		wire("OPTIONS * HTTP/1.1", "Host: a", "Expect: x"), // 417, once complete
		// A long method and a target at the limit: no 414 while the line
		// is still arriving.
		wire(strings.Repeat("M", 31)+" /"+strings.Repeat("a", DefaultMaxTargetBytes-1)+" HTTP/1.1", "Host: a"),
	}
	for _, v := range valid {
		_, wantN, wantErr := runParseHead([]byte(v), nil)
		if wantN != len(v) && wantErr != errUnknownTE {
			t.Fatalf("parseHead(%q) = %d, %v; want %d", v, wantN, wantErr, len(v))
		}
		for i := 0; i < len(v); i++ {
			in := []byte(v[:i])
			if req, n, err := runParseHead(in, nil); err != errNeedMore || n != 0 {
				t.Errorf("parseHead(%q) = %s, want 0, %v", in, describeHead(req, n, err), errNeedMore)
			}
		}
		// The same head followed by anything parses the same.
		for _, tail := range []string{"x", "\r\n", "GET / HTTP/1.1\r\n"} {
			if _, n, err := runParseHead([]byte(v+tail), nil); n != wantN || err != wantErr {
				t.Errorf("parseHead(%q) = %d, %v; want %d, %v", v+tail, n, err, wantN, wantErr)
			}
		}
	}
}

// TestParseHeadSlicesIntoInput checks the documented aliasing: every slice
// of an accepted Request points into the input, except a decoded Path.
func TestParseHeadSlicesIntoInput(t *testing.T) {
	in := []byte(wire("GET /a?b HTTP/1.1", "Host: h", "X: y"))
	req, _, err := runParseHead(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range [][]byte{req.Method, req.Target, req.RawPath, req.Path, req.Query, req.Host, req.Fields[1].Name, req.Fields[1].Value} {
		if !within(s, in) {
			t.Errorf("parseHead(%q): slice %q is not within the input", in, s)
		}
	}
}

// within reports whether s is a sub-slice of buf (an empty s always is).
func within(s, buf []byte) bool {
	if len(s) == 0 {
		return true
	}
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	s0 := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return s0 >= b0 && s0+uintptr(len(s)) <= b0+uintptr(len(buf))
}

type chunkCase struct {
	line string
	size int64
	err  error // nil: accepted with size
	why  string
}

var chunkCases = []chunkCase{
	{"0", 0, nil, "last-chunk (RFC 9112 §7.1)"},
	{"5", 5, nil, "chunk-size = 1*HEXDIG"},
	{"a", 10, nil, "lowercase hex"},
	{"A", 10, nil, "uppercase hex"},
	{"fF", 255, nil, "mixed case hex"},
	{"000", 0, nil, "zero with leading zeros"},
	{"00000000000000000000001", 1, nil, "leading zeros do not count toward overflow"},
	{"7fffffffffffffff", math.MaxInt64, nil, "largest size"},
	{"8000000000000000", 0, errChunkSize, "overflow of int64 (RFC 9112 §7.1: anticipate overflow)"},
	{"10000000000000000", 0, errChunkSize, "overflow"},
	{"", 0, errChunkSize, "empty size"},
	{" 5", 0, errChunkSize, "leading space: not in the grammar"},
	{"\t5", 0, errChunkSize, "leading HTAB"},
	{"-1", 0, errChunkSize, "sign"},
	{"+5", 0, errChunkSize, "sign"},
	{"g", 0, errChunkSize, "not hex"},
	{"0x5", 0, errChunkExt, "0x prefix: size 0 followed by junk"},
	{"5g", 0, errChunkExt, "junk after the size"},
	{"5 ", 0, errChunkExt, "trailing whitespace: BWS only before ';' (RFC 9112 §7.1.1)"},
	{"5\t", 0, errChunkExt, "trailing HTAB"},
	{"5;", 0, errChunkExt, "bare ';': chunk-ext-name required (RFC 9112 §7.1.1)"},
	{"5; ", 0, errChunkExt, "';' then whitespace only"},
	{"5;name", 5, nil, "extension without value (RFC 9112 §7.1.1)"},
	{"5;name=value", 5, nil, "extension with token value"},
	{"5 ; name = value", 5, nil, "BWS around ';' and '=' (RFC 9112 §7.1.1)"},
	{"5\t;\tname\t=\tvalue", 5, nil, "BWS as HTAB"},
	{"5;a=1;b;c=\"x\"", 5, nil, "several extensions"},
	{"5;name=\"quoted value\"", 5, nil, "quoted-string value (RFC 9110 §5.6.4)"},
	{"5;name=\"\"", 5, nil, "empty quoted-string"},
	{"5;name=\"esc\\\"aped\\\\\"", 5, nil, "quoted-pairs"},
	{"5;name=\"caf\xe9\"", 5, nil, "obs-text in a quoted-string (RFC 9110 §5.6.4)"},
	{"5;name=\"unterminated", 0, errChunkExt, "unterminated quoted-string"},
	{"5;name=\"", 0, errChunkExt, "lone opening quote"},
	{"5;name=\"a\\", 0, errChunkExt, "quoted-pair cut short"},
	{"5;name=\"a\x00\"", 0, errChunkExt, "NUL in a quoted-string"},
	{"5;name=\"\\\x01\"", 0, errChunkExt, "control byte in a quoted-pair"},
	{"5;name=\"a\"b", 0, errChunkExt, "junk after a quoted-string"},
	{"5;name=", 0, errChunkExt, "'=' without value"},
	{"5;=value", 0, errChunkExt, "value without name"},
	{"5;na me", 0, errChunkExt, "space inside a name"},
	{"5;name=va lue", 0, errChunkExt, "space inside a token value"},
	{"5;name ", 0, errChunkExt, "trailing whitespace after a name"},
	{"5;name=value ", 0, errChunkExt, "trailing whitespace after a value"},
	{"5;name=\"v\" ", 0, errChunkExt, "trailing whitespace after a quoted value"},
	{"5;n@me", 0, errChunkExt, "non-tchar in a name"},
	{"5;name=v@l", 0, errChunkExt, "non-tchar in a token value"},
	{"5\r", 0, errChunkExt, "CR after the size"},
	{"5;a\x00", 0, errChunkExt, "NUL after a name"},
}

func TestParseChunkLine(t *testing.T) {
	for _, c := range chunkCases {
		size, err := parseChunkLine([]byte(c.line))
		if err != c.err || err == nil && size != c.size {
			want := fmt.Sprint(c.size)
			if c.err != nil {
				want = c.err.Error()
			}
			t.Errorf("parseChunkLine(%q) = %d, %v; want %s (%s)", c.line, size, err, want, c.why)
		}
	}
}

// BenchmarkParseHead measures a typical browser GET, and one whose path
// must be made canonical.
func BenchmarkParseHead(b *testing.B) {
	for _, target := range []string{"/static/index.html?v=3", "//static/./a/../index%2Ehtml?v=3"} {
		b.Run(target, func(b *testing.B) {
			in := []byte("GET " + target + " HTTP/1.1\r\nHost: example.com\r\n" +
				"User-Agent: Mozilla/5.0\r\nAccept: text/html,*/*;q=0.8\r\nAccept-Encoding: gzip, br\r\n" +
				"Accept-Language: en-GB,en;q=0.9\r\nConnection: keep-alive\r\nCookie: a=b; c=d\r\n\r\n")
			var r Request
			r.Fields = make([]Field, 0, 16)
			lim := Limits{}.withDefaults()
			var pathBuf []byte
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				r.reset()
				if _, err := parseHead(in, &r, &lim, &pathBuf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
