package engine

// This file runs llhttp's request test vectors (test/request/*.md in
// github.com/nodejs/llhttp, MIT licensed, see
// testdata/llhttp-request/LICENSE-llhttp) through the engine and compares
// the verdicts with llhttp's.
//
// Format of a vector (as llhttp's test/md-test.ts reads it): a heading
// names it, an HTML comment holds its meta data (JSON), a ```http block
// holds the raw input and a ```log block what llhttp's callbacks logged.
// The input is converted the way md-test.ts does it, in this order:
//
//  1. the final newline of the block is dropped;
//  2. a backslash at the end of a line joins it to the next (no line end);
//  3. every remaining line end becomes CRLF;
//  4. the escapes \r \n \t \f and \xHH become CR, LF, HTAB, FF and the byte;
//  5. octal escapes \N, \NN, \NNN become that character (md-test.ts hands
//     the input over as a JavaScript string, so a code above 0x7f is sent as
//     its UTF-8 encoding, as it is here).
//
// (md-test.ts also evaluates ${...} as JavaScript; no vector uses it and the
// loader refuses one that does.)
//
// Which vectors run: meta type "request" (llhttp's default strict parser),
// and "request-finish" (the same parser, then llhttp_finish at the end of the
// input, which for a server is the client closing its side, as the socket
// test below does anyway). Not run: every "request-lenient-*" type (each
// switches on an llhttp leniency flag that by design accepts what RFC 9112
// says to refuse; the strict twin of each such vector is run), and the
// "skipBody" vector (llhttp's on_headers_complete returns 1, "no body", which
// is response-side HEAD semantics; a server must read a request's body). The
// "noScan" and "pause" metas only change how the llhttp harness feeds or
// pauses the parser, not the verdict, so those vectors run normally.
//
// Verdicts. llhttp's log gives, per message, "message complete" or not, and
// at the end maybe "error code=N". Error code 5 ("Data after Connection:
// close") and 22/23 (paused for CONNECT/Upgrade) are not refusals of a
// message: the connection stops being HTTP there, so only the messages
// before are compared. A log that ends without an error but in the middle
// of a message means the input ran out.
//
// The engine's verdict comes from a real Server on a loopback socket: the
// input is written, the write side closed, and the responses read. A
// response from the test handler (which reads the whole body) is a
// completed message; so are 501 "method not implemented" and 417 (the head
// was parsed and understood; refusing a method or an expectation is policy,
// the message is still framed and drained, and the connection stays open).
// Any other refusal rejects the message. 400 "request body ended early"
// is the input running out, not a verdict. For completed messages the
// method, target, version and body length must match llhttp's spans. When
// both refuse a message, the refusals must be about the same kind of fault
// (request line, target, line ends, field lines, framing, chunks).
//
// Host. llhttp does not implement RFC 9112 §3.2's "MUST respond with 400 to
// any HTTP/1.1 request message that lacks a Host header field", so most of
// its vectors omit Host. So that each vector still tests what it was written
// for, the loader inserts "Host: llhttp.test" after the request line of every
// HTTP/1.1 message that llhttp saw without one (message boundaries come from
// llhttp's log). parseHead's refusal of the original, Host-less first
// message is asserted separately (and parse_test.go covers missing Host).
//
// Exceptions. Where the engine's RFC 9112/9110 reading is stricter (or
// otherwise different) than llhttp's, the vector is listed in
// vectorExceptions below with the engine's outcome and the reason. The test
// fails when a verdict differs and is not listed, and when a listed vector's
// outcome changes (so the table cannot go stale).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// vectorExceptions lists the vectors on which the engine deliberately
// disagrees with llhttp, keyed "file.md: heading". ours is the engine's
// outcome as vectorOutcome.String formats it.
var vectorExceptions = map[string]struct{ ours, why string }{
	// Methods: any token is a method (RFC 9110 §9.1). The engine parses
	// these requests and (in conn.go, not parseHead) answers 501 Not
	// Implemented for methods outside RFC 9110 and PATCH unless
	// Server.ExtraMethods lists them; the connection stays open. llhttp
	// knows a fixed list of methods and refuses others while parsing.
	"invalid.md: HTTP protocol and ANNOUNCE method": {"1 accepted", whyMethod},
	"invalid.md: Invalid method":                    {"1 accepted", whyMethod},

	// Protocols other than HTTP/1.x: llhttp also parses RTSP/1.0 and
	// ICE/1.0 request lines. HTTP-version = HTTP-name "/" DIGIT "." DIGIT
	// (RFC 9112 §2.3), so these are malformed HTTP request lines.
	"method.md: SOURCE request with ICE":    {"0 accepted, then 400 Bad Request: malformed HTTP version", whyProtocol},
	"method.md: OPTIONS request with RTSP":  {"0 accepted, then 400 Bad Request: malformed HTTP version", whyProtocol},
	"method.md: ANNOUNCE request with RTSP": {"0 accepted, then 400 Bad Request: malformed HTTP version", whyProtocol},
	"sample.md: No HTTP version":            {"0 accepted, then 400 Bad Request: malformed request line", "an HTTP/0.9 simple request: RFC 9112 §3 requires the HTTP-version in the request-line (HTTP/0.9 is not supported, RFC 9112 Appendix C.1)"},
	"invalid.md: Invalid HTTP version":      {"0 accepted", "the input (\"GET / HTTP/5.6\") ends before the request line does; parseHead judges a request line once its line end arrives (then it answers 505, RFC 9110 §15.6.6, see parse_test.go), while llhttp refuses the version bytes as they stream in"},
	"method.md: M-SEARCH request":           {"0 accepted, then 400 Bad Request: invalid request-target", "asterisk-form is only for OPTIONS (RFC 9112 §3.2.4); M-SEARCH * is SSDP, HTTP over UDP multicast"},
	"uri.md: `host:port` and basic auth":    {"0 accepted, then 400 Bad Request: invalid request-target", "userinfo in an absolute-form target: RFC 9110 §4.2.4 says a recipient SHOULD treat its presence as an error"},
	"uri.md: Fragment in URI":               {"0 accepted, then 400 Bad Request: invalid request-target", whyFragment},

	// These vectors test Transfer-Encoding, but their target carries a
	// fragment, which the engine refuses first (parse_test.go has the
	// same Transfer-Encoding cases with a valid target).
	"transfer-encoding.md: POST with `Transfer-Encoding` and `Content-Length`":               {"0 accepted, then 400 Bad Request: invalid request-target", whyFragment},
	"transfer-encoding.md: POST with `chunked` before other transfer coding names":           {"0 accepted, then 400 Bad Request: invalid request-target", whyFragment},
	"transfer-encoding.md: POST with `chunked` and duplicate transfer-encoding":              {"0 accepted, then 400 Bad Request: invalid request-target", whyFragment},
	"transfer-encoding.md: POST with `chunked` as last transfer-encoding":                    {"0 accepted, then 400 Bad Request: invalid request-target", whyFragment + "; with a valid target the engine answers 501 for deflate (RFC 9112 §6.1)"},
	"transfer-encoding.md: POST with `chunked` as last transfer-encoding (multiple headers)": {"0 accepted, then 400 Bad Request: invalid request-target", whyFragment + "; with a valid target the engine answers 501 for deflate (RFC 9112 §6.1)"},
	"transfer-encoding.md: POST with `chunkedchunked` as transfer-encoding":                  {"0 accepted, then 400 Bad Request: invalid request-target", whyFragment},
}

const (
	whyMethod   = "a method llhttp does not know is still a token (RFC 9110 §9.1): the engine parses the request and answers 501 (RFC 9110 §15.6.2), keeping the connection"
	whyProtocol = "not HTTP: HTTP-version = \"HTTP/\" DIGIT \".\" DIGIT (RFC 9112 §2.3)"
	whyFragment = "'#' cannot occur in a request-target: origin-form = absolute-path [ \"?\" query ] (RFC 9112 §3.2.1), and a fragment is not sent (RFC 9110 §7.1)"
)

// llhttpVector is one test case of llhttp's markdown.
type llhttpVector struct {
	name  string // "file.md: heading"
	line  int
	meta  map[string]any
	input []byte // after the md-test.ts conversions (before Host insertion)
	log   []string
}

// vectorDir holds llhttp's request test files.
const vectorDir = "testdata/llhttp-request"

func vecLoad(t *testing.T) []llhttpVector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no llhttp request vectors in %s", vectorDir)
	}
	var all []llhttpVector
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := vecParseFile(filepath.Base(f), string(b))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, vs...)
	}
	return all
}

var vecMetaRE = regexp.MustCompile(`^<!--\s*meta=(\{.*\})\s*-->\s*$`)

// vecParseFile splits one llhttp markdown file into vectors.
func vecParseFile(file, text string) ([]llhttpVector, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var (
		out     []llhttpVector
		heading string
		cur     *llhttpVector
		seen    = map[string]int{}
	)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(l, "#"))
		case vecMetaRE.MatchString(l):
			var meta map[string]any
			if err := json.Unmarshal([]byte(vecMetaRE.FindStringSubmatch(l)[1]), &meta); err != nil {
				return nil, fmt.Errorf("%s:%d: meta: %v", file, i+1, err)
			}
			name := file + ": " + heading
			if seen[name]++; seen[name] > 1 {
				name += " #" + strconv.Itoa(seen[name])
			}
			out = append(out, llhttpVector{name: name, line: i + 1, meta: meta})
			cur = &out[len(out)-1]
		case l == "```http" || l == "```log":
			j := i + 1
			for j < len(lines) && lines[j] != "```" {
				j++
			}
			if j == len(lines) {
				return nil, fmt.Errorf("%s:%d: unterminated block", file, i+1)
			}
			if cur == nil {
				return nil, fmt.Errorf("%s:%d: block without meta", file, i+1)
			}
			// The block's content, ending with the newline before ```.
			body := strings.Join(lines[i+1:j], "\n") + "\n"
			if l == "```http" {
				in, err := vecConvertInput(body)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %v", file, i+1, err)
				}
				cur.input = in
			} else {
				cur.log = lines[i+1 : j]
			}
			i = j
		}
	}
	for _, v := range out {
		if v.input == nil || v.log == nil {
			return nil, fmt.Errorf("%s:%d: vector %q lacks an http or log block", file, v.line, v.name)
		}
	}
	return out, nil
}

var (
	vecEscapedNewlineRE = regexp.MustCompile(`\\(\r\n|\r|\n)`)
	vecNewlineRE        = regexp.MustCompile(`\r\n|\r|\n`)
	vecHexEscapeRE      = regexp.MustCompile(`\\x([0-9a-fA-F]+)`)
	vecOctalEscapeRE    = regexp.MustCompile(`\\([0-7]{1,3})`)
)

// vecConvertInput applies md-test.ts's conversions, in its order.
func vecConvertInput(s string) ([]byte, error) {
	if strings.Contains(s, "${") {
		return nil, fmt.Errorf("inline JavaScript is not supported")
	}
	s = strings.TrimSuffix(s, "\n")
	s = vecEscapedNewlineRE.ReplaceAllString(s, "")
	s = vecNewlineRE.ReplaceAllString(s, "\r\n")
	s = strings.ReplaceAll(s, `\r`, "\r")
	s = strings.ReplaceAll(s, `\n`, "\n")
	s = strings.ReplaceAll(s, `\t`, "\t")
	s = strings.ReplaceAll(s, `\f`, "\f")
	code := func(re *regexp.Regexp, base int) func(string) string {
		return func(m string) string {
			n, _ := strconv.ParseInt(re.FindStringSubmatch(m)[1], base, 32)
			return string(rune(n)) // a JavaScript char code, sent as UTF-8
		}
	}
	s = vecHexEscapeRE.ReplaceAllStringFunc(s, code(vecHexEscapeRE, 16))
	s = vecOctalEscapeRE.ReplaceAllStringFunc(s, code(vecOctalEscapeRE, 8))
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("input is not valid UTF-8 after conversion")
	}
	return []byte(s), nil
}

// relevant reports whether the vector is run, and why not.
func (v *llhttpVector) relevant() (bool, string) {
	ty, _ := v.meta["type"].(string)
	switch {
	case ty != "request" && ty != "request-finish":
		return false, "type " + ty + " needs an llhttp leniency flag"
	case v.meta["skipBody"] == true:
		return false, "skipBody is response-side (HEAD) framing"
	}
	return true, ""
}

// llMessage is one message as llhttp's log describes it.
type llMessage struct {
	begin    int // offset of "message begin"
	method   string
	url      string
	version  string
	fields   []string // header field names
	headDone bool     // "headers complete"
	done     bool     // "message complete"
	bodyLen  int
}

// llResult is llhttp's verdict on a whole input.
type llResult struct {
	msgs      []llMessage
	errCode   int // 0: no error
	errReason string
}

var (
	vecLogOffRE  = regexp.MustCompile(`^off=(\d+|NULL) (.*)$`)
	vecLogSpanRE = regexp.MustCompile(`^len=(\d+) span\[(\w+)\]=(.*)$`)
	vecLogErrRE  = regexp.MustCompile(`^error code=(\d+) reason="(.*)"$`)
)

// vecParseLog reads the parts of llhttp's log the comparison needs.
func vecParseLog(log []string) (llResult, error) {
	var r llResult
	var field strings.Builder
	cur := func() *llMessage {
		if len(r.msgs) == 0 {
			r.msgs = append(r.msgs, llMessage{})
		}
		return &r.msgs[len(r.msgs)-1]
	}
	for _, l := range log {
		m := vecLogOffRE.FindStringSubmatch(l)
		if m == nil {
			return r, fmt.Errorf("unrecognized log line %q", l)
		}
		off, _ := strconv.Atoi(m[1])
		ev := m[2]
		if s := vecLogSpanRE.FindStringSubmatch(ev); s != nil {
			n, _ := strconv.Atoi(s[1])
			// llhttp prints a span between quotes without escaping
			// quotes or backslashes (only the body spans "cr" and "lf"
			// are special, and only their lengths are used).
			text := s[3]
			if len(text) >= 2 && text[0] == '"' && text[len(text)-1] == '"' {
				text = text[1 : len(text)-1]
			}
			msg := cur()
			switch s[2] {
			case "method":
				msg.method += text
			case "url":
				msg.url += text
			case "version":
				msg.version += text
			case "header_field":
				field.WriteString(text)
			case "body":
				msg.bodyLen += n
			}
			continue
		}
		if e := vecLogErrRE.FindStringSubmatch(ev); e != nil {
			r.errCode, _ = strconv.Atoi(e[1])
			r.errReason = e[2]
			continue
		}
		switch {
		case ev == "message begin":
			r.msgs = append(r.msgs, llMessage{begin: off})
		case ev == "header_field complete":
			cur().fields = append(cur().fields, field.String())
			field.Reset()
		case strings.HasPrefix(ev, "headers complete"):
			cur().headDone = true
		case ev == "message complete":
			cur().done = true
		}
	}
	return r, nil
}

func (r *llResult) completed() int {
	n := 0
	for _, m := range r.msgs {
		if !m.done {
			break
		}
		n++
	}
	return n
}

// stops reports whether llhttp stopped treating the input as HTTP requests
// after the completed messages, without refusing anything: code 5 (data
// after "Connection: close") and codes 22, 23 (paused for CONNECT/Upgrade).
func (r *llResult) stops() bool {
	return r.errCode == 5 || r.errCode == 22 || r.errCode == 23
}

// rejects reports whether llhttp refused the message after the completed ones.
func (r *llResult) rejects() bool { return r.errCode != 0 && !r.stops() }

// vecAddHost inserts a Host field after the request line of every HTTP/1.1
// message llhttp saw without one (see the file comment), ending it the way
// the request line ends.
func vecAddHost(in []byte, r llResult) []byte {
	out := slices.Clone(in)
	for i := len(r.msgs) - 1; i >= 0; i-- {
		m := r.msgs[i]
		if slices.ContainsFunc(m.fields, func(f string) bool { return strings.EqualFold(f, "host") }) {
			continue
		}
		p := m.begin
		for p < len(out) && (out[p] == '\r' || out[p] == '\n') {
			p++
		}
		lf := bytes.IndexByte(out[p:], '\n')
		if lf < 0 {
			continue
		}
		line, eol := out[p:p+lf], "\n"
		if bytes.HasSuffix(line, []byte("\r")) {
			line, eol = line[:len(line)-1], "\r\n"
		}
		if !bytes.HasSuffix(line, []byte(" HTTP/1.1")) {
			continue
		}
		out = slices.Insert(out, p+lf+1, []byte("Host: llhttp.test"+eol)...)
	}
	return out
}

// vecOurMessage is the engine's answer to one message.
type vecOurMessage struct {
	status  int
	msg     string // refusal text, or the handler's report
	handled bool   // the test handler ran and read the whole body
	method  string
	target  string
	minor   string
	bodyLen int
}

// vectorOutcome is the engine's verdict on a whole input.
type vectorOutcome struct {
	msgs []vecOurMessage
}

// completed counts the leading messages the engine accepted: read by the
// handler, or answered 501 (method) or 417 (expectation) after parsing.
func (o vectorOutcome) completed() int {
	n := 0
	for _, m := range o.msgs {
		if !m.accepted() {
			break
		}
		n++
	}
	return n
}

func (m vecOurMessage) accepted() bool {
	return m.handled || m.status == 501 && strings.Contains(m.msg, errUnknownMethod.Msg) || m.status == 417
}

func (m vecOurMessage) ranOut() bool {
	return m.status == 400 && strings.Contains(m.msg, errBodyEOF.Msg)
}

// rejection is the refusal after the accepted messages, or "".
func (o vectorOutcome) rejection() string {
	n := o.completed()
	if n == len(o.msgs) || o.msgs[n].ranOut() {
		return ""
	}
	return o.msgs[n].msg
}

// String formats the outcome as "<n> accepted" plus the refusal, if any.
func (o vectorOutcome) String() string {
	s := fmt.Sprintf("%d accepted", o.completed())
	if r := o.rejection(); r != "" {
		s += ", then " + r
	}
	return s
}

func (r llResult) String() string {
	s := fmt.Sprintf("%d accepted", r.completed())
	switch {
	case r.rejects():
		s += fmt.Sprintf(", then error %d %q", r.errCode, r.errReason)
	case r.stops():
		s += fmt.Sprintf(", then stops (%d %q)", r.errCode, r.errReason)
	}
	return s
}

// vectorHandler reads the whole body and reports what it saw.
var vectorHandler = HandlerFunc(func(w ResponseWriter, r *Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		return // the engine answers with the body's refusal
	}
	h := w.Header()
	h.Set("X-Handled", "1")
	h.Set("X-Method", string(r.Method))
	h.Set("X-Target", string(r.Target))
	h.Set("X-Minor", strconv.Itoa(r.ProtoMinor))
	h.Set("X-Body-Len", strconv.FormatInt(n, 10))
	h.SetContentLength(0)
})

// vecStartServer serves vectorHandler on a loopback port.
func vecStartServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: vectorHandler, Limits: Limits{HeaderTimeout: 5 * time.Second}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// exchange sends in on a fresh connection, closes the write side and reads
// every response. methods[i] is the method of message i, so that a
// response to HEAD is read without a body.
func vecExchange(t *testing.T, addr string, in []byte, methods []string) vectorOutcome {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(in); err != nil {
		t.Fatalf("write: %v", err)
	}
	c.(*net.TCPConn).CloseWrite()
	br := bufio.NewReader(c)
	var o vectorOutcome
	for i := 0; ; i++ {
		if _, err := br.Peek(1); err != nil {
			if err != io.EOF {
				t.Fatalf("after %d responses: %v", i, err)
			}
			return o
		}
		method := "GET"
		if i < len(methods) && methods[i] != "" {
			method = methods[i]
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("response %d body: %v", i+1, err)
		}
		m := vecOurMessage{status: resp.StatusCode, msg: strings.TrimSpace(string(body))}
		if resp.Header.Get("X-Handled") == "1" {
			m.handled = true
			m.method = resp.Header.Get("X-Method")
			m.target = resp.Header.Get("X-Target")
			m.minor = resp.Header.Get("X-Minor")
			m.bodyLen, _ = strconv.Atoi(resp.Header.Get("X-Body-Len"))
			m.msg = ""
		} else if method == "HEAD" {
			m.msg = resp.Status // no body; the reason phrase must do
		}
		o.msgs = append(o.msgs, m)
	}
}

func TestVectorsLLHTTP(t *testing.T) {
	vectors := vecLoad(t)
	addr := vecStartServer(t)
	used := map[string]bool{}
	ran := 0
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			if ok, why := v.relevant(); !ok {
				t.Skip(why)
			}
			ran++
			ll, err := vecParseLog(v.log)
			if err != nil {
				t.Fatalf("line %d: %v", v.line, err)
			}
			in := vecAddHost(v.input, ll)
			methods := make([]string, len(ll.msgs))
			for i, m := range ll.msgs {
				methods[i] = m.method
			}
			ours := vecExchange(t, addr, in, methods)
			vecCheckHead(t, v, in, ll, ours)

			exc, listed := vectorExceptions[v.name]
			if listed {
				used[v.name] = true
			}
			agree := vecVerdictsAgree(ll, ours)
			t.Logf("llhttp: %v; engine: %v", ll, ours)
			switch {
			case agree && listed:
				t.Errorf("input %q: llhttp and engine now agree (%v); remove the exception (%s)", in, ours, exc.why)
			case !agree && !listed:
				t.Errorf("input %q:\nllhttp: %v\nengine: %v\n(no exception listed)", in, ll, ours)
			case !agree && ours.String() != exc.ours:
				t.Errorf("input %q:\nllhttp: %v\nengine: %v\nexception expects engine: %s", in, ll, ours, exc.ours)
			}
			if agree {
				vecCompareMessages(t, in, ll, ours)
			}
		})
	}
	relevant := 0
	for _, v := range vectors {
		if ok, _ := v.relevant(); ok {
			relevant++
		}
	}
	if ran == relevant { // not narrowed by -run
		for name := range vectorExceptions {
			if !used[name] {
				t.Errorf("exception %q names no vector that ran", name)
			}
		}
	}
	if relevant == 0 {
		t.Fatal("no vector is relevant")
	}
}

// vecVerdictsAgree compares whole-input verdicts (see the file comment).
// When both refuse a message, they must refuse it for the same kind of
// fault (vecOurClass, llResult.class), so that an unrelated refusal (say, of
// the target) cannot hide a disagreement about what a vector is about.
func vecVerdictsAgree(ll llResult, ours vectorOutcome) bool {
	n := ll.completed()
	if ll.stops() {
		return ours.completed() >= n
	}
	if ours.completed() != n || (ours.rejection() != "") != ll.rejects() {
		return false
	}
	if !ll.rejects() {
		return true
	}
	// A line-end fault can be reported as a fault of whatever line it is
	// in (a CR inside a field name is "invalid header token" to llhttp).
	ourClass, llClass := vecOurClass(ours.rejection()), ll.class()
	return ourClass == llClass || ourClass == "line-end" && llClass != "framing" && llClass != "target" ||
		llClass == "line-end" && ourClass != "framing" && ourClass != "target"
}

// vecOurClass names the part of a message an engine refusal is about.
func vecOurClass(refusal string) string {
	classes := []struct {
		class string
		errs  []*ProtocolError
	}{
		{"request-line", []*ProtocolError{errRequestLine, errMethod, errVersion, errHTTPVersion}},
		{"target", []*ProtocolError{errTarget, errPathEncoding, errPathNUL, errTargetTooLong}},
		{"line-end", []*ProtocolError{errBareCR, errMixedEOL}},
		{"field", []*ProtocolError{errObsFold, errNoColon, errFieldName, errSpaceBeforeColon,
			errFieldValue, errNoHost, errDupHost, errBadHost, errHeaderTooLarge, errTooManyFields}},
		{"framing", []*ProtocolError{errContentLength, errDupLength, errCLAndTE, errTENotChunked,
			errTEChunkedTwice, errTEMalformed, errTEHTTP10, errUnknownTE}},
		{"chunk", []*ProtocolError{errChunkSize, errChunkExt, errChunkEnd, errChunkLine, errChunkBareLF, errTrailer}},
	}
	for _, c := range classes {
		for _, e := range c.errs {
			if strings.HasSuffix(refusal, ": "+e.Msg) {
				return c.class
			}
		}
	}
	return "other"
}

// class names the part of the message llhttp's error is about, in
// vecOurClass's terms (llhttp's error codes are its llhttp_errno_t).
func (r *llResult) class() string {
	reason := strings.ToLower(r.errReason)
	switch {
	case strings.Contains(reason, "chunk"):
		return "chunk"
	case r.errCode == 2 || r.errCode == 3 || r.errCode == 25, // HPE_STRICT, HPE_LF_EXPECTED, HPE_CR_EXPECTED
		strings.Contains(r.errReason, "CR") || strings.Contains(r.errReason, "LF"):
		return "line-end"
	case r.errCode == 6 || r.errCode == 8 || r.errCode == 9: // method, constant (protocol name), version
		return "request-line"
	case r.errCode == 7: // HPE_INVALID_URL
		return "target"
	case r.errCode == 10 || r.errCode == 30: // header token/value; space after start line
		return "field"
	case r.errCode == 4 || r.errCode == 11 || r.errCode == 15: // Content-Length, Transfer-Encoding
		return "framing"
	case r.errCode == 12: // HPE_INVALID_CHUNK_SIZE
		return "chunk"
	}
	return "other"
}

// vecCompareMessages checks method, target, version and body length of the
// messages both accepted, where the test handler saw them.
func vecCompareMessages(t *testing.T, in []byte, ll llResult, ours vectorOutcome) {
	t.Helper()
	for i := 0; i < ll.completed(); i++ {
		l, o := ll.msgs[i], ours.msgs[i]
		if !o.handled {
			continue
		}
		minor := "1"
		if l.version == "1.0" {
			minor = "0"
		}
		bodyLen := l.bodyLen
		if l.method == "CONNECT" {
			// llhttp hands everything after a CONNECT head over as
			// tunnel data; the engine frames a CONNECT request like any
			// other (its handler answers before any tunnel would start).
			bodyLen = o.bodyLen
		}
		if o.method != l.method || o.target != l.url || o.minor != minor || o.bodyLen != bodyLen {
			t.Errorf("input %q message %d: engine saw %s %q 1.%s body %d; llhttp %s %q %s body %d",
				in, i+1, o.method, o.target, o.minor, o.bodyLen, l.method, l.url, l.version, l.bodyLen)
		}
	}
}

// vecCheckHead runs parseHead on the input directly: its verdict on
// the first message must be the one the server acted on. It also checks
// that the original input, where llhttp accepted a Host-less HTTP/1.1 first
// message, is refused for lacking Host (RFC 9112 §3.2).
func vecCheckHead(t *testing.T, v llhttpVector, in []byte, ll llResult, ours vectorOutcome) {
	t.Helper()
	lim := Limits{}.withDefaults()
	var req Request
	var pathBuf []byte
	_, err := parseHead(in, &req, &lim, &pathBuf)
	switch {
	case err == errNeedMore:
		if len(ours.msgs) > 0 {
			t.Errorf("parseHead(%q) = errNeedMore, but the server answered %d %s", in, ours.msgs[0].status, ours.msgs[0].msg)
		}
	case err == nil || err == errExpectation:
		// The server may still refuse the message for its body.
		if len(ours.msgs) == 0 {
			t.Errorf("parseHead(%q) accepted the head (err %v), but the server did not answer", in, err)
		}
	default:
		pe := err.(*ProtocolError)
		if len(ours.msgs) == 0 || ours.msgs[0].status != pe.Status || !strings.Contains(ours.msgs[0].msg, pe.Msg) &&
			!strings.Contains(ours.msgs[0].msg, reasonPhrase(pe.Status)) {
			t.Errorf("parseHead(%q) = %v, but the server answered %+v", in, err, ours.msgs)
		}
	}

	if err != nil && err != errExpectation || bytes.Equal(in, v.input) {
		return
	}
	req = Request{}
	if _, err := parseHead(v.input, &req, &lim, &pathBuf); err != errNoHost {
		t.Errorf("parseHead(%q) = %v, want %v (the same head with Host is accepted)", v.input, err, errNoHost)
	}
}
