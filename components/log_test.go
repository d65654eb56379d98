package components

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// logArrival is the fixed arrival time of the format tests.
var logArrival = time.Date(2000, 10, 10, 13, 55, 36, 0, time.FixedZone("", -7*3600))

// logOpen makes a Log with a fixed clock, closed at the end of the test.
func logOpen(t *testing.T, opts LogOptions) *Log {
	t.Helper()
	l, err := newLog(opts)
	if err != nil {
		t.Fatal(err)
	}
	l.now = func() time.Time { return logArrival }
	t.Cleanup(func() { l.Close() })
	return l
}

// logLines syncs l and returns the lines of file.
func logLines(t *testing.T, l *Log, file string) []string {
	t.Helper()
	l.Sync()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestLogFormats(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("alice:pw"))
	req := "GET /docs/a%20b.html?q=1 HTTP/1.1\r\nHost: example.com\r\n" +
		"Referer: http://example.com/\r\nUser-Agent: Mozilla \"quoted\" \\ caf\xc3\xa9 \xff\r\n" +
		"Authorization: Basic " + auth + "\r\nX-Forwarded-For: 192.0.2.44\r\nConnection: close\r\n\r\n"
	tests := []struct {
		format string
		want   string
	}{
		{"common", `192.0.2.44 - alice [10/Oct/2000:13:55:36 -0700] "GET /docs/a%20b.html?q=1 HTTP/1.1" 200 5`},
		{"combined", `192.0.2.44 - alice [10/Oct/2000:13:55:36 -0700] "GET /docs/a%20b.html?q=1 HTTP/1.1" 200 5 ` +
			`"http://example.com/" "Mozilla \"quoted\" \\ caf\xc3\xa9 \xff"`},
		{"", `192.0.2.44 - alice [10/Oct/2000:13:55:36 -0700] "GET /docs/a%20b.html?q=1 HTTP/1.1" 200 5 ` +
			`"http://example.com/" "Mozilla \"quoted\" \\ caf\xc3\xa9 \xff"`},
		{"json", `{"time":"2000-10-10T13:55:36.000-07:00","remote":"192.0.2.44","user":"alice","method":"GET",` +
			`"uri":"/docs/a%20b.html?q=1","proto":"HTTP/1.1","host":"example.com","status":200,"bytes":5,` +
			`"referer":"http://example.com/","user_agent":"Mozilla \"quoted\" \\ café \ufffd","duration_ms":0.000}`},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "access.log")
			l := logOpen(t, LogOptions{File: file, Format: tt.format, TrustedProxies: []string{"127.0.0.1"}})
			url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("hello")})).URL
			if resp, body := sluicetest.RoundTrip(t, url, req); resp.StatusCode != 200 || body != "hello" {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			lines := logLines(t, l, file)
			if len(lines) != 1 {
				t.Fatalf("lines: %q", lines)
			}
			want := tt.want
			if tt.format == "combined" || tt.format == "" {
				// Non-ASCII bytes are escaped as \xhh, as Apache does.
				want = strings.NewReplacer("\xc3\xa9", `\xc3\xa9`, "\xff", `\xff`).Replace(want)
			}
			if lines[0] != want {
				t.Errorf("line\n got %s\nwant %s", lines[0], want)
			}
			if tt.format == "json" {
				var v map[string]any
				if err := json.Unmarshal([]byte(lines[0]), &v); err != nil {
					t.Errorf("not JSON: %v", err)
				}
			}
		})
	}
}

// The json preset names the request's ID, when it has one.
func TestLogJSONRequestID(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file, Format: "json"})
	setID := pipe.Pipe(func(c *pipe.Conn) bool {
		c.SetRequestID([]byte("4bf92f3577b34da6"))
		return true
	})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, setID, guardText("hello")})).URL
	if resp, _ := sluicetest.RoundTrip(t, url, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := logLines(t, l, file)
	var v map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &v) != nil || v["request_id"] != "4bf92f3577b34da6" {
		t.Errorf("lines %q, want one JSON line with the request ID", lines)
	}
}

// Requests the engine refuses before any handler runs are logged through
// Refused, set as the server's OnRefused: their raw request line stands
// for the request, escaped, and what is unknown is "-" (issue 14, finding
// 8: they never reached the access log).
func TestLogRefused(t *testing.T) {
	tests := []struct {
		name, raw string
		combined  string // the line after the time
		json      map[string]any
	}{
		{"control bytes in the request line",
			"GET /\x1b[31mred\\\"x HTTP/1.1\r\nHost: a\r\nUser-Agent: evil\x07\r\n\r\n",
			`"GET /\x1b[31mred\\\"x HTTP/1.1" 400 40 "-" "-"`,
			map[string]any{"method": "GET", "uri": "/\x1b[31mred\\\"x", "proto": "HTTP/1.1", "status": 400.0,
				"request": "GET /\x1b[31mred\\\"x HTTP/1.1", "user_agent": "", "referer": ""}},
		{"TLS handshake",
			"\x16\x03\x01\x00\xa5\x01\x00\r\n\r\n",
			`"\x16\x03\x01\x00\xa5\x01\x00" 400 40 "-" "-"`,
			map[string]any{"method": "", "uri": "", "proto": "", "status": 400.0,
				"request": "\x16\x03\x01\x00\ufffd\x01\x00"}},
		{"unknown method, fields parsed",
			"BREW /pot HTTP/1.1\r\nHost: a\r\nUser-Agent: tea/1\r\nReferer: http://a/\r\n" +
				"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("bob\n:pw")) + "\r\n\r\n",
			`"BREW /pot HTTP/1.1" 501 44 "http://a/" "tea/1"`,
			map[string]any{"method": "BREW", "uri": "/pot", "status": 501.0, "user": "bob\n",
				"request": "BREW /pot HTTP/1.1", "user_agent": "tea/1"}},
	}
	for _, format := range []string{"combined", "json"} {
		t.Run(format, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "access.log")
			l := logOpen(t, LogOptions{File: file, Format: format})
			url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("x")}),
				sluicetest.Configure(func(s *engine.Server) { s.OnRefused = l.Refused })).URL
			for _, tt := range tests {
				resp, _ := sluicetest.RoundTrip(t, url, tt.raw)
				if resp.StatusCode < 400 {
					t.Fatalf("%s: status %d", tt.name, resp.StatusCode)
				}
			}
			lines := logLines(t, l, file)
			if len(lines) != len(tests) {
				t.Fatalf("lines: %q", lines)
			}
			for i, tt := range tests {
				line := lines[i]
				if format == "combined" {
					user := "-"
					if strings.Contains(tt.raw, "Basic") {
						user = `bob\n`
					}
					want := "127.0.0.1 - " + user + " [10/Oct/2000:13:55:36 -0700] " + tt.combined
					if line != want {
						t.Errorf("%s:\n got %s\nwant %s", tt.name, line, want)
					}
					continue
				}
				var v map[string]any
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatalf("%s: %q is not JSON: %v", tt.name, line, err)
				}
				for k, want := range tt.json {
					if v[k] != want {
						t.Errorf("%s: %s = %#v, want %#v\n%s", tt.name, k, v[k], want, line)
					}
				}
			}
		})
	}
}

// A server-wide Log before the router records every request but those a
// route's log with Replace records: those no route matches, those of
// routes without a log, those stopped before their route's log ran, and
// those of a route whose log adds to it (the default).
func TestLogServerWide(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replace=%v", replace), func(t *testing.T) {
			dir := t.TempDir()
			serverFile, routeFile := filepath.Join(dir, "server.log"), filepath.Join(dir, "route.log")
			server := logOpen(t, LogOptions{File: serverFile, Format: "common", ServerWide: true})
			route := logOpen(t, LogOptions{File: routeFile, Format: "common", Replace: replace})
			deny := pipe.Pipe(func(c *pipe.Conn) bool { return c.Error(403, "no") })
			rt, err := pipe.NewRouter(
				pipe.Route{Match: []string{"/own"}, Pipeline: pipe.Chain{route, guardText("own")}},
				pipe.Route{Match: []string{"/plain"}, Pipeline: pipe.Chain{guardText("plain")}},
				pipe.Route{Match: []string{"/denied"}, Pipeline: pipe.Chain{deny, route, guardText("x")}},
			)
			if err != nil {
				t.Fatal(err)
			}
			url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{server, rt})).URL
			for path, want := range map[string]int{"/own": 200, "/plain": 200, "/denied": 403, "/nowhere": 404} {
				if resp, _ := sluicetest.RoundTrip(t, url, "GET "+path+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); resp.StatusCode != want {
					t.Fatalf("GET %s = %d, want %d", path, resp.StatusCode, want)
				}
			}
			requests := func(lines []string) []string {
				var out []string
				for _, l := range lines {
					_, after, _ := strings.Cut(l, `"GET `)
					path, _, _ := strings.Cut(after, " ")
					out = append(out, path)
				}
				slices.Sort(out)
				return out
			}
			want := []string{"/denied", "/nowhere", "/own", "/plain"}
			if replace {
				want = []string{"/denied", "/nowhere", "/plain"}
			}
			if got := requests(logLines(t, server, serverFile)); !slices.Equal(got, want) {
				t.Errorf("server-wide log has %v, want %v", got, want)
			}
			if got := requests(logLines(t, route, routeFile)); !slices.Equal(got, []string{"/own"}) {
				t.Errorf("route log has %v, want /own", got)
			}
		})
	}
	if _, err := newLog(LogOptions{ServerWide: true, Replace: true}); err == nil || !strings.Contains(err.Error(), "route's log") {
		t.Errorf("a server-wide log with replace: error %v", err)
	}
}

// A request without Referer or User-Agent has "-" for them.
func TestLogMissingFields(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("x")})).URL
	sluicetest.RoundTrip(t, url, "GET /a HTTP/1.1\r\nHost: a\r\nReferer: \r\nConnection: close\r\n\r\n")
	want := `127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 1 "-" "-"`
	if lines := logLines(t, l, file); len(lines) != 1 || lines[0] != want {
		t.Errorf("lines %q, want %q", lines, want)
	}
}

// The line has the final status and the body's length, whoever answered.
func TestLogStatusAndBytes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file, Format: "json"})
	deny := pipe.Pipe(func(c *pipe.Conn) bool {
		if strings.HasPrefix(string(c.Request.Path), "/private") {
			return c.Error(403, "no")
		}
		return true
	})
	empty := pipe.Source(func(c *pipe.Conn) pipe.Content { c.SetStatus(204); return nil })
	stream := pipe.Source(func(c *pipe.Conn) pipe.Content {
		return func(w pipe.Writer) error {
			for range 100 {
				if _, err := w.Write([]byte(strings.Repeat("x", 1000))); err != nil {
					return err
				}
				if err := w.Flush(); err != nil {
					return err
				}
			}
			return nil
		}
	})
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/empty"}, Pipeline: empty},
		pipe.Route{Match: []string{"/stream"}, Pipeline: stream},
		pipe.Route{Match: []string{"/"}, Pipeline: guardText("hello")},
	)
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, deny, rt})).URL
	for _, p := range []string{"/", "/private/x", "/empty", "/stream", "/nothing-here/"} {
		sluicetest.Get(t, url+p)
	}
	want := []struct {
		uri          string
		status, size int
	}{
		{"/", 200, 5},
		{"/private/x", 403, len("403 Forbidden: no\n")},
		{"/empty", 204, 0},
		{"/stream", 200, 100000},
		{"/nothing-here/", 200, 5},
	}
	lines := logLines(t, l, file)
	if len(lines) != len(want) {
		t.Fatalf("lines: %q", lines)
	}
	for i, line := range lines {
		var v struct {
			URI    string
			Status int
			Bytes  int
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if v.URI != want[i].uri || v.Status != want[i].status || v.Bytes != want[i].size {
			t.Errorf("line %d: %+v, want %+v", i, v, want[i])
		}
	}
}

// logrotate's way: rename the file, then have the log reopen its path.
func TestLogRotateReopen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "access.log")
	l := logOpen(t, LogOptions{File: file, Format: "common"})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("x")})).URL
	sluicetest.Get(t, url+"/1")
	sluicetest.Get(t, url+"/2")
	l.Sync()
	if err := os.Rename(file, file+".1"); err != nil {
		t.Fatal(err)
	}
	sluicetest.Get(t, url+"/3") // still written to the renamed file
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	sluicetest.Get(t, url+"/4")
	sluicetest.Get(t, url+"/5")
	old, cur := logLines(t, l, file+".1"), logLines(t, l, file)
	if len(old) != 3 || !strings.Contains(old[2], "GET /3 ") {
		t.Errorf("rotated file: %q", old)
	}
	if len(cur) != 2 || !strings.Contains(cur[0], "GET /4 ") || !strings.Contains(cur[1], "GET /5 ") {
		t.Errorf("new file: %q", cur)
	}

	// A path that cannot be reopened keeps the old file.
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(dir+".gone", dir)
	if err := l.Reopen(); err == nil {
		t.Error("Reopen into a missing directory succeeded")
	}
	sluicetest.Get(t, url+"/6")
	l.Sync()
	if data, _ := os.ReadFile(filepath.Join(dir+".gone", "access.log")); !strings.Contains(string(data), "GET /6 ") {
		t.Errorf("line lost after a failed reopen: %q", data)
	}
}

// After Close, lines are dropped and counted, and requests still served.
func TestLogClosed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("x")})).URL
	sluicetest.Get(t, url+"/before")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if resp, _ := sluicetest.Get(t, url+"/after"); resp.StatusCode != 200 {
		t.Errorf("after Close: %d", resp.StatusCode)
	}
	if l.Dropped() != 1 {
		t.Errorf("Dropped = %d, want 1", l.Dropped())
	}
	if err := l.Reopen(); err == nil {
		t.Error("Reopen after Close succeeded")
	}
	l.Sync() // returns at once
	data, _ := os.ReadFile(file)
	if strings.Count(string(data), "\n") != 1 || !strings.Contains(string(data), "/before") {
		t.Errorf("file: %q", data)
	}
}

func TestLogOptions(t *testing.T) {
	for _, tt := range []struct {
		opts LogOptions
		err  string
	}{
		{LogOptions{Format: "xml"}, `log: unknown format "xml"`},
		{LogOptions{Buffer: -1}, "log: buffer must not be negative"},
		{LogOptions{File: filepath.Join(t.TempDir(), "no", "such", "dir")}, "no such file or directory"},
		{LogOptions{TrustedProxies: []string{"x"}}, "log: trusted_proxies"},
	} {
		if _, err := NewLog(tt.opts); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NewLog(%+v) = %v, want %q", tt.opts, err, tt.err)
		}
	}
	// Each name is compared with the *os.File it stands for, not with
	// stdout: under go test -json the testing package sets os.Stderr to
	// os.Stdout (for test2json), and "stderr" is then stdout too.
	for f, want := range map[string]*os.File{"": os.Stdout, "-": os.Stdout, "stdout": os.Stdout, "stderr": os.Stderr} {
		l, err := newLog(LogOptions{File: f})
		if err != nil {
			t.Fatal(err)
		}
		if l.out != want || l.Reopen() != nil {
			t.Errorf("file %q: out %v, want %v", f, l.out, want.Name())
		}
		l.Close()
	}
}

func TestLogEscaping(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		`"q"`:          `\"q\"`,
		`a\b`:          `a\\b`,
		"tab\tnl\n":    `tab\tnl\n`,
		"\x01\x7f\x80": `\x01\x7f\x80`,
	} {
		if got := string(appendLogField(nil, []byte(in))); got != want {
			t.Errorf("appendLogField(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"plain":        `"plain"`,
		"\"\\/":        `"\"\\/"`,
		"\x00\x1f\x7f": `"\u0000\u001f\u007f"`,
		"é\xe9€":       `"é\ufffd€"`,
	} {
		got := appendJSONString(nil, []byte(in))
		if string(got) != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", in, got, want)
		}
		var s string
		if err := json.Unmarshal(got, &s); err != nil {
			t.Errorf("%s: %v", got, err)
		}
	}
}

func ExampleNewLog() {
	dir, err := os.MkdirTemp("", "log-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "access.log")

	comp, err := NewLog(LogOptions{File: file, Format: "json"})
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
	url := srv.URL
	guardExampleGet(url + "/hello?lang=en")

	access.Sync() // wait for the writer, as a test must
	data, _ := os.ReadFile(file)
	var line struct {
		Method, URI, Proto string
		Status, Bytes      int
	}
	json.Unmarshal(data, &line)
	fmt.Printf("%+v\n", line)
	// Output:
	// {Method:GET URI:/hello?lang=en Proto:HTTP/1.1 Status:200 Bytes:6}
}

// logBenchFormat is a format of one's own for BenchmarkLog: the combined
// format's fields and a few more.
const logBenchFormat = `{remote} [{time_iso}] "{request}" {status} {body_bytes_sent} {duration_ms} "{req.User-Agent}" "{resp.Content-Type}" {tls_version}`

func BenchmarkLog(b *testing.B) {
	for _, format := range []string{"common", "combined", "json", logBenchFormat} {
		name := format
		if format == logBenchFormat {
			name = "own"
		}
		b.Run(name, func(b *testing.B) {
			l, err := newLog(LogOptions{File: filepath.Join(b.TempDir(), "access.log"), Format: format, Buffer: 1 << 16})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			r := &engine.Request{
				Method: []byte("GET"), Target: []byte("/docs/index.html?x=1"), ProtoMinor: 1,
				Host: []byte("example.com"), RemoteAddr: guardTCP("192.0.2.1"),
				Fields: []engine.Field{
					{Name: []byte("User-Agent"), Value: []byte("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0")},
					{Name: []byte("Referer"), Value: []byte("https://example.com/")},
				},
			}
			start := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				l.emit(r, nil, nil, 200, start, 1234, "")
			}
			l.Sync()
			b.ReportMetric(float64(l.Dropped()), "dropped")
		})
	}
}

// A Basic user name is one field of the combined line however it is
// spelt: spaces are escaped with the rest, so a name cannot shift the
// time, request and status columns after it.
func TestLogUserIsOneField(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file, Format: "combined"})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("x")})).URL
	auth := base64.StdEncoding.EncodeToString([]byte(`a b" - [x 200:pw`))
	if resp, _ := sluicetest.RoundTrip(t, url, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic "+auth+"\r\nConnection: close\r\n\r\n"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := logLines(t, l, file)
	if len(lines) != 1 {
		t.Fatalf("lines: %q", lines)
	}
	want := `127.0.0.1 - a\x20b\"\x20-\x20[x\x20200 [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "-"`
	if lines[0] != want {
		t.Errorf("got  %s\nwant %s", lines[0], want)
	}
	if f := strings.Fields(lines[0]); len(f) != 12 {
		t.Errorf("%d space-separated fields, want 12: %q", len(f), f)
	}
}
