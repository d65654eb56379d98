package engine

import (
	"bytes"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/httpgrammar"
)

// headSeeds are inputs for the parser fuzzers: every parse_test.go case
// plus requests chosen to start the fuzzer near interesting shapes.
func headSeeds() [][]byte {
	seeds := [][]byte{
		[]byte(wire("GET / HTTP/1.1", "Host: a")),
		[]byte("GET /index.html?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8.0\r\nAccept: */*\r\n\r\n"),
		[]byte("POST /submit HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"),
		[]byte("POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
		[]byte("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
		[]byte("GET http://example.com:8080/a%20b?c#d HTTP/1.1\r\nHost: x\r\n\r\n"),
		[]byte("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n"),
		[]byte("OPTIONS * HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n"),
		// Smuggling shapes.
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n"),
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n"),
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n"),
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n"),
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n X: y\r\n\r\n"),
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 05\r\n\r\n"),
		[]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1_0\r\n\r\n"),
		[]byte("GET / HTTP/1.1\r\nHost: a\r\nDummy: x\nContent-Length: 23\r\n\r\nGET /admin HTTP/1.1\r\n\r\n"),
		[]byte("GET / HTTP/1.1\r\nHost: a\r\n\rZGET /evil: HTTP/1.1\r\nHost: a\r\n\r\n"),
		[]byte("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
		[]byte("GET / HTTP/1.1\r\nX: \x00\r\nHost: a\r\n\r\n"),
		[]byte("GET / HTTP/1.1\r\nHost: a\r\nX:\xff\xfe\r\n\r\n"),
		[]byte("GET /%00 HTTP/1.1\r\nHost: a\r\n\r\n"),
		[]byte("GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n"),
		// Spellings of one path (issue 14), and paths refused.
		[]byte("GET //admin/./x/../%2E%2e/admin/secret.html HTTP/1.1\r\nHost: a\r\n\r\n"),
		[]byte("GET http://a//admin/%2e/ HTTP/1.1\r\nHost: a\r\n\r\n"),
		[]byte("GET /admin%2Fsecret.html HTTP/1.1\r\nHost: a\r\n\r\n"),
		[]byte("GET /a/../../etc/passwd HTTP/1.1\r\nHost: a\r\n\r\n"),
		[]byte("GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n"),
		[]byte("\r\n\r\nGET / HTTP/1.1\nHost: a\n\n"),
		[]byte("GET / HTTP/2.0\r\nHost: a\r\n\r\n"),
		[]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
	}
	for _, c := range parseCases {
		seeds = append(seeds, []byte(c.in))
	}
	return seeds
}

// fuzzLimits are small so that the fuzzer reaches the limits.
var fuzzLimits = Limits{MaxTargetBytes: 128, MaxHeaderBytes: 512, MaxHeaderCount: 12}

func FuzzParseHead(f *testing.F) {
	for _, s := range headSeeds() {
		f.Add(s)
	}
	lim := fuzzLimits.withDefaults()
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParseHead(t, b, &lim)
	})
}

// checkParseHead runs parseHead on b and checks the invariants of its
// answer. It is shared with the differential fuzzer.
func checkParseHead(t *testing.T, b []byte, lim *Limits) (*Request, int, error) {
	req := &Request{}
	var pathBuf []byte
	n, err := parseHead(b, req, lim, &pathBuf)

	start := 0 // the empty lines parseHead skips
	for start < len(b) && (b[start] == '\n' || b[start] == '\r' && start+1 < len(b) && b[start+1] == '\n') {
		if b[start] == '\r' {
			start++
		}
		start++
	}

	switch err {
	case errNeedMore:
		if n != 0 {
			t.Fatalf("parseHead(%q) = %d, errNeedMore; want 0", b, n)
		}
		// Waiting is bounded: never more than a head's worth of bytes.
		if len(b)-start > lim.MaxHeaderBytes {
			t.Fatalf("parseHead(%q) waits with %d bytes buffered (limit %d)", b, len(b)-start, lim.MaxHeaderBytes)
		}
		return req, n, err
	case nil, errExpectation:
	default:
		pe, ok := err.(*ProtocolError)
		if !ok {
			t.Fatalf("parseHead(%q) = %d, %v: not a *ProtocolError", b, n, err)
		}
		switch pe.Status {
		case 400, 414, 431, 501, 505:
		default:
			t.Fatalf("parseHead(%q) = %v: unexpected status", b, err)
		}
		if n != 0 || !pe.Close {
			t.Fatalf("parseHead(%q) = %d, %v; want 0 consumed and Close", b, n, err)
		}
		return req, n, err
	}

	// Accepted (or understood and refused with 417).
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("parseHead(%q) = %s: "+format, append([]any{b, describeHead(req, n, err)}, args...)...)
	}
	if n <= start || n > len(b) || b[n-1] != '\n' {
		fail("consumed must end with the LF of the empty line")
	}
	if n-start > lim.MaxHeaderBytes {
		fail("head of %d bytes is over the limit %d", n-start, lim.MaxHeaderBytes)
	}
	head := b[:n]
	for _, s := range [][]byte{req.Method, req.Target, req.RawPath, req.Query, req.Host} {
		if !within(s, head) {
			fail("slice %q is not within the head", s)
		}
	}
	if !within(req.Path, head) && !within(req.Path, pathBuf) {
		fail("Path %q is neither in the head nor in pathBuf", req.Path)
	}
	if req.Host == nil {
		fail("Host is nil")
	}
	if !httpgrammar.IsToken(req.Method) {
		fail("method is not a token")
	}
	if len(req.Target) == 0 || len(req.Target) > lim.MaxTargetBytes {
		fail("target length %d", len(req.Target))
	}
	for _, c := range req.Target {
		if c <= ' ' || c >= 0x7f || c == '#' {
			fail("target byte %q", c)
		}
	}
	if bytes.IndexByte(req.Path, 0) >= 0 {
		fail("NUL in Path")
	}
	if req.Target[0] != '*' && string(req.Method) != "CONNECT" {
		p := string(req.Path)
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.Contains(p, "/./") ||
			strings.Contains(p, "/../") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..") {
			fail("Path is not canonical")
		}
	}
	if req.ProtoMinor != 0 && req.ProtoMinor != 1 {
		fail("ProtoMinor %d", req.ProtoMinor)
	}
	if len(req.Fields) > lim.MaxHeaderCount {
		fail("%d fields over the limit %d", len(req.Fields), lim.MaxHeaderCount)
	}
	hosts, cls, tes := 0, 0, 0
	for _, f := range req.Fields {
		if !within(f.Name, head) || !within(f.Value, head) {
			fail("field %q: %q not within the head", f.Name, f.Value)
		}
		if !httpgrammar.IsToken(f.Name) {
			fail("field name %q is not a token", f.Name)
		}
		for _, c := range f.Value {
			if c < ' ' && c != '\t' || c == 0x7f {
				fail("control byte %q in the value of %q", c, f.Name)
			}
		}
		if len(f.Value) > 0 && (f.Value[0] == ' ' || f.Value[0] == '\t' ||
			f.Value[len(f.Value)-1] == ' ' || f.Value[len(f.Value)-1] == '\t') {
			fail("value %q of %q is not trimmed", f.Value, f.Name)
		}
		switch {
		case httpgrammar.EqualFold(f.Name, "host"):
			hosts++
		case httpgrammar.EqualFold(f.Name, "content-length"):
			cls++
			if v, ok := parseContentLength(f.Value); !ok || v != req.ContentLength {
				fail("Content-Length %q but ContentLength %d", f.Value, req.ContentLength)
			}
		case httpgrammar.EqualFold(f.Name, "transfer-encoding"):
			tes++
		}
	}
	if hosts > 1 || req.ProtoMinor == 1 && hosts != 1 {
		fail("%d Host fields in HTTP/1.%d", hosts, req.ProtoMinor)
	}
	switch {
	case tes > 0 && (cls > 0 || req.ContentLength != -1 || req.ProtoMinor == 0):
		fail("Transfer-Encoding with Content-Length %d, HTTP/1.%d", req.ContentLength, req.ProtoMinor)
	case tes == 0 && cls == 0 && req.ContentLength != 0:
		fail("no framing fields but ContentLength %d", req.ContentLength)
	}
	if req.expectCont && req.ProtoMinor == 0 {
		fail("100-continue in HTTP/1.0")
	}

	// The head alone parses the same, and every proper prefix of it asks
	// for more (a head never depends on what follows it).
	req2 := &Request{}
	var pathBuf2 []byte
	if n2, err2 := parseHead(head, req2, lim, &pathBuf2); n2 != n || err2 != err ||
		describeHead(req2, n2, err2) != describeHead(req, n, err) {
		fail("the head alone parses as %s", describeHead(req2, n2, err2))
	}
	step := 1
	if len(head) > 600 {
		step = len(head) / 300
	}
	for i := 0; i < len(head); i += step {
		req2.reset()
		if n2, err2 := parseHead(head[:i], req2, lim, &pathBuf2); err2 != errNeedMore {
			fail("its prefix %q parses as %s", head[:i], describeHead(req2, n2, err2))
		}
	}
	return req, n, err
}

// chunkLineGrammar is RFC 9112 §7.1 chunk-size [ chunk-ext ] as a regular
// expression over the line decoded as Latin-1 (one rune per byte), the
// oracle for parseChunkLine.
var chunkLineGrammar = func() *regexp.Regexp {
	const (
		tchar  = `[!#$%&'*+\-.^_` + "`" + `|~0-9A-Za-z]`
		token  = tchar + `+`
		bws    = `[ \t]*`
		qdtext = `[\t \x21\x23-\x5b\x5d-\x7e\x{80}-\x{ff}]`
		qpair  = `\\[\t \x21-\x7e\x{80}-\x{ff}]`
		quoted = `"(?:` + qdtext + `|` + qpair + `)*"`
		ext    = bws + `;` + bws + token + `(?:` + bws + `=` + bws + `(?:` + token + `|` + quoted + `))?`
	)
	return regexp.MustCompile(`^([0-9A-Fa-f]+)(?:` + ext + `)*$`)
}()

func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

func FuzzChunkLine(f *testing.F) {
	for _, c := range chunkCases {
		f.Add([]byte(c.line))
	}
	for _, s := range []string{"1;a=\"\\\"\"", "0;" + strings.Repeat("a=b;", 20) + "c", "ffffffffffffffff", "0000000000000000000000000000001f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		size, err := parseChunkLine(line)
		m := chunkLineGrammar.FindStringSubmatch(latin1(line))
		switch {
		case m == nil:
			if err == nil {
				t.Fatalf("parseChunkLine(%q) = %d, nil; want an error (not chunk-size [ chunk-ext ])", line, size)
			}
		default:
			want, _ := new(big.Int).SetString(m[1], 16)
			if !want.IsInt64() {
				if err != errChunkSize {
					t.Fatalf("parseChunkLine(%q) = %d, %v; want %v (overflow)", line, size, err, errChunkSize)
				}
			} else if err != nil || size != want.Int64() {
				t.Fatalf("parseChunkLine(%q) = %d, %v; want %d, nil", line, size, err, want.Int64())
			}
		}
		if err != nil && err != errChunkSize && err != errChunkExt {
			t.Fatalf("parseChunkLine(%q) = %v: unexpected error", line, err)
		}
	})
}
