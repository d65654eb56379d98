package components

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
	"github.com/sluice-server/sluice/requestid"
	"github.com/sluice-server/sluice/sluicetest"
)

// logFormatReq is the request of the format tests: fields a client may
// fill with anything.
const logFormatReq = "GET /a/../b%20c?q=\"1\" HTTP/1.1\r\nHost: example.com\r\n" +
	"User-Agent: ua \"x\"\t\\ caf\xc3\xa9 \xff\r\nX-Multi: one\r\nX-Multi: two\r\n" +
	"Referer: http://r/\r\nConnection: close\r\n\r\n"

// A format of one's own names fields in braces; every value from the
// request is escaped as nginx escapes (\xHH), every missing one is "-".
func TestLogFormatText(t *testing.T) {
	tests := []struct {
		format, want string
	}{
		{`{remote} {method} {uri} {status} {bytes} {body_bytes_sent}`,
			`127.0.0.1 GET /a/../b%20c?q=\x221\x22 200 5 5`},
		{`{request}|{path}|{query}|{proto}|{host}`,
			`GET /a/../b%20c?q=\x221\x22 HTTP/1.1|/b c|q=\x221\x22|HTTP/1.1|example.com`},
		{`"{req.User-Agent}" "{user_agent}" {referer}`,
			`"ua \x22x\x22\x09\x5C caf\xC3\xA9 \xFF" "ua \x22x\x22\x09\x5C caf\xC3\xA9 \xFF" http://r/`},
		{`{req.x-multi}; {req.Missing}; {resp.Content-Type}; {resp.content-length}; {resp.X-None}`,
			`one, two; -; text/plain; charset=utf-8; -; -`},
		{`{user} {cache_status} {upstream_addr} {upstream_time_ms} {tls_version} {tls_cipher} {request_id}`,
			`- - - - - - -`},
		{`{time} [{time_iso}] {time_unix}`,
			`10/Oct/2000:13:55:36 -0700 [2000-10-10T13:55:36.000-07:00] 971211336.000`},
		{`{{literal}} {status}`, `{literal} 200`},
		{`{ status }`, `200`},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "access.log")
			l := logOpen(t, LogOptions{File: file, Format: tt.format})
			url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("hello")})).URL
			if resp, body := sluicetest.RoundTrip(t, url, logFormatReq); resp.StatusCode != 200 || body != "hello" {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			lines := logLines(t, l, file)
			if len(lines) != 1 || lines[0] != tt.want {
				t.Errorf("format %s\n got %q\nwant %q", tt.format, lines, tt.want)
			}
		})
	}
}

// fields choose the members of JSON lines; each is a valid JSON value
// whatever the request held.
func TestLogFormatJSONFields(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file, Format: "json", Fields: []string{
		"time", "remote", "request", "status", "body_bytes_sent", "duration_ms", "time_unix",
		"req.User-Agent", "resp.Content-Length", "upstream_time_ms", "tls_version", "path"}})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("hello")})).URL
	sluicetest.RoundTrip(t, url, logFormatReq)
	lines := logLines(t, l, file)
	if len(lines) != 1 {
		t.Fatalf("lines %q", lines)
	}
	want := `{"time":"2000-10-10T13:55:36.000-07:00","remote":"127.0.0.1","request":"GET /a/../b%20c?q=\"1\" HTTP/1.1",` +
		`"status":200,"body_bytes_sent":5,"duration_ms":0.000,"time_unix":971211336.000,` +
		`"req.User-Agent":"ua \"x\"\t\\ café \ufffd","resp.Content-Length":"","upstream_time_ms":null,"tls_version":"","path":"/b c"}`
	if lines[0] != want {
		t.Errorf("line\n got %s\nwant %s", lines[0], want)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &v); err != nil {
		t.Errorf("not JSON: %v", err)
	}
}

// request_id is the ID the request_id stage gave the request, which the
// request's header carries on too; a client's own X-Request-Id is not it.
func TestLogFormatRequestID(t *testing.T) {
	for _, format := range []string{"{request_id} {req.X-Request-Id}", "json"} {
		file := filepath.Join(t.TempDir(), "access.log")
		opts := LogOptions{File: file, Format: format}
		if format == "json" {
			opts.Fields = []string{"request_id", "req.X-Request-Id"}
		}
		l := logOpen(t, opts)
		ids, err := requestid.New(requestid.Options{})
		if err != nil {
			t.Fatal(err)
		}
		url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{ids, l, guardText("x")})).URL
		sluicetest.RoundTrip(t, url, "GET / HTTP/1.1\r\nHost: a\r\nX-Request-Id: forged\r\n\r\n")
		lines := logLines(t, l, file)
		if len(lines) != 1 {
			t.Fatalf("%s: lines %q", format, lines)
		}
		var id, field string
		if format == "json" {
			var v struct {
				ID    string `json:"request_id"`
				Field string `json:"req.X-Request-Id"`
			}
			if err := json.Unmarshal([]byte(lines[0]), &v); err != nil {
				t.Fatalf("not JSON: %q", lines[0])
			}
			id, field = v.ID, v.Field
		} else {
			id, field, _ = strings.Cut(lines[0], " ")
		}
		if len(id) != requestid.Len || id != field {
			t.Errorf("%s: line %q: want the made ID twice", format, lines[0])
		}
	}
}

// Over TLS, tls_version and tls_cipher name what the handshake chose.
func TestLogFormatTLS(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file, Format: "{tls_version} {tls_cipher} {proto}"})
	s := sluicetest.NewTLSServer(t, pipe.Handler(pipe.Chain{l, guardText("x")}))
	st := sluicetest.Handshake(t, s.Addr, s.ClientConfig())
	s.RoundTrip(t, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	lines := logLines(t, l, file)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "TLSv1.3 ") || !strings.HasSuffix(lines[0], " HTTP/1.1") ||
		!strings.Contains(lines[0], " TLS_") || st.Version == 0 {
		t.Errorf("line %q: want TLSv1.3, a TLS_ cipher suite and HTTP/1.1", lines)
	}
}

// A refused request has its raw line for {request} and "-" for what
// never arrived, in a format of one's own too.
func TestLogFormatRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file, Format: `"{request}" {status} {method} {proto} {resp.Content-Type} {upstream_addr}`})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("x")}),
		sluicetest.Configure(func(s *engine.Server) { s.OnRefused = l.Refused })).URL
	sluicetest.RoundTrip(t, url, "\x16\x03\x01\"\\\r\n\r\n")
	lines := logLines(t, l, file)
	if want := `"\x16\x03\x01\x22\x5C" 400 - - - -`; len(lines) != 1 || lines[0] != want {
		t.Errorf("got %q, want %q", lines, want)
	}
}

// Formats that cannot work are refused, saying what to write instead;
// an unknown field's error lists the known ones.
func TestLogFormatErrors(t *testing.T) {
	tests := []struct {
		opts LogOptions
		want string
	}{
		{LogOptions{Format: "{remote} {nope}"}, `unknown field "nope"; the fields are remote, user, time,`},
		{LogOptions{Format: "json", Fields: []string{"status", "bogus"}}, `unknown field "bogus"`},
		{LogOptions{Format: "{remote"}, "has no closing '}'"},
		{LogOptions{Format: "a } b {status}"}, "closes no field"},
		{LogOptions{Format: "no fields"}, "unknown format"},
		{LogOptions{Format: "{{ no fields }}"}, "names no field"},
		{LogOptions{Format: "{req.Bad Name}"}, "must be a token"},
		{LogOptions{Format: "{req.}"}, "must be a token"},
		{LogOptions{Format: "{status}\n{status}"}, "line end"},
		{LogOptions{Format: "combined", Fields: []string{"status"}}, "set format: json"},
		{LogOptions{Format: "json", Fields: []string{"status", "status"}}, "listed twice"},
		{LogOptions{Format: "{status}", CacheStatus: true}, "write {cache_status}"},
		{LogOptions{Format: "json", Fields: []string{"status"}, CacheStatus: true}, "among the fields"},
	}
	for _, tt := range tests {
		_, err := newLog(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one containing %q", tt.opts, err, tt.want)
		}
	}
}

// Every field LogFields lists compiles, and the list names each once.
func TestLogFieldsCompile(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range LogFields {
		if seen[f.Name] {
			t.Errorf("%s listed twice", f.Name)
		}
		seen[f.Name] = true
		name := strings.Replace(strings.Replace(f.Name, ".NAME", ".X-Id", 1), "NAME", "X", 1)
		if _, err := compileLogText("{"+name+"}", false); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
		if f.Doc == "" {
			t.Errorf("%s has no doc", f.Name)
		}
	}
}

// FuzzLogFormat compiles any format; one that compiles makes, for a
// hostile request, one line without a raw control byte or line end, and
// a JSON line that parses.
func FuzzLogFormat(f *testing.F) {
	for _, s := range []string{logFormatCombined, "{remote} {req.User-Agent}", "{{}}{status}", "{", "}", "{req.}",
		"{resp.X}{{", "\"{request}\"", "{time}{time_iso}{time_unix}{duration_ms}"} {
		f.Add(s, "a\x00\"\\\xff\xc3")
	}
	f.Fuzz(func(t *testing.T, format, value string) {
		r := &engine.Request{
			Method: []byte("GET"), Target: []byte("/" + value), Path: []byte("/" + value), Query: []byte(value),
			Host: []byte(value), ProtoMinor: 1, RemoteAddr: guardTCP("192.0.2.1"),
			Fields: []engine.Field{{Name: []byte("User-Agent"), Value: []byte(value)}, {Name: []byte("X"), Value: []byte(value)}},
		}
		ci, err := clientaddr.New(nil, "")
		if err != nil {
			t.Fatal(err)
		}
		l := &Log{client: ci}
		e := logEntry{l: l, r: r, status: 200, n: 3, cacheStatus: value}
		// The format's own text is the config's, not the client's: check
		// the values only where it holds no control byte (a tab is fine
		// in a format).
		own := strings.ContainsFunc(format, func(r rune) bool { return r < 0x20 || r == 0x7f })
		if lf, err := compileLogText(format, false); err == nil && !own {
			line := lf.append(nil, &e)
			for _, ch := range []byte(line) {
				if ch < 0x20 || ch == 0x7f {
					t.Fatalf("format %q: raw control byte %#x in %q", format, ch, line)
				}
			}
		}
		names := strings.Fields(format)
		if lf, err := compileLogJSON(names); err == nil {
			line := lf.append(nil, &e)
			if !json.Valid(line) {
				t.Fatalf("fields %q: not JSON: %q", names, line)
			}
		}
	})
}

// Behind a proxy, upstream_addr is the upstream that answered and
// upstream_time_ms how long it took; without one they are "-".
func TestLogFormatUpstream(t *testing.T) {
	up := sluicetest.NewServer(t, pipe.Handler(guardText("from upstream")))
	p, err := NewProxy(ProxyOptions{Options: proxy.Options{Upstreams: []string{up.URL}, Logger: guardQuiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.(io.Closer).Close() })
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file, Format: "{uri} {upstream_addr} {upstream_time_ms}"})
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/up"}, Pipeline: pipe.Chain{l, p}},
		pipe.Route{Match: []string{"/here"}, Pipeline: pipe.Chain{l, guardText("here")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(rt)).URL
	if _, body := sluicetest.Get(t, url+"/up"); body != "from upstream" {
		t.Fatalf("body %q", body)
	}
	sluicetest.Get(t, url+"/here")
	var lines []string
	sluicetest.WaitFor(t, "two lines", func() bool { lines = logLines(t, l, file); return len(lines) == 2 })
	host := strings.TrimPrefix(up.URL, "http://")
	slices.Sort(lines) // /here before /up
	if lines[0] != "/here - -" {
		t.Errorf("without an upstream: %q, want %q", lines[0], "/here - -")
	}
	f := strings.Fields(lines[1])
	if len(f) != 3 || f[1] != host {
		t.Fatalf("through the proxy: %q, want /up %s and a time", lines[1], host)
	}
	if ms, err := strconv.ParseFloat(f[2], 64); err != nil || ms < 0 || !strings.Contains(f[2], ".") {
		t.Errorf("upstream_time_ms %q: want milliseconds, to the microsecond", f[2])
	}
}

// A format of one's own names fields in braces, as nginx's log_format
// names variables; a value from the request is escaped (\xHH), a missing
// one is "-".
func ExampleNewLog_format() {
	dir, err := os.MkdirTemp("", "log-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "access.log")

	comp, err := NewLog(LogOptions{File: file, Format: `{method} {uri} {status} {body_bytes_sent} "{req.User-Agent}" {resp.Content-Type} {tls_version}`})
	if err != nil {
		panic(err)
	}
	access := comp.(*Log)
	defer access.Close()
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{access, guardText("hello\n")}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	guardExampleGet(srv.URL+"/hello?lang=en", "User-Agent", `say "hi"`)

	// The line is queued when the response ends: poll for it.
	var data []byte
	for deadline := time.Now().Add(5 * time.Second); len(data) == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		access.Sync()
		data, _ = os.ReadFile(file)
	}
	fmt.Print(string(data))
	// Output:
	// GET /hello?lang=en 200 6 "say \x22hi\x22" text/plain; charset=utf-8 -
}
