package config

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// matchersConfig has routes that differ by conditions and regular
// expressions; each answers its name (and captures, for expressions).
const matchersConfig = `
routes:
  - match: /api/
    header: {X-Version: "2"}
    pipeline: [{text: api-v2}]
  - match: /api/
    header: {Authorization: "~ ^Bearer [a-z]+$"}
    pipeline: [{text: api-bearer}]
  - match: /api/
    query: {format: json, debug: null}
    pipeline: [{text: api-json}]
  - match: /api/
    query: {debug: "*"}
    pipeline: [{text: api-debug}]
  - match: /api/
    header: {X-Absent: null, X-Present: "*"}
    pipeline: [{text: api-present}]
  - match: /api/
    pipeline: [{text: api}]
  - match: /internal/
    client: [10.0.0.0/8, "::1/128"]
    pipeline: [{text: internal}]
  - match: /internal/
    client: {addresses: [203.0.113.0/24], trusted_proxies: [127.0.0.1]}
    methods: [GET]
    pipeline: [{text: internal-proxied}]
  - match: /local/
    client: [127.0.0.1]
    pipeline: [{text: local}]
  - match: /proto/
    protocol: http/1.0
    pipeline: [{text: proto-1.0}]
  - match: /proto/
    protocol: [https, http/2]
    pipeline: [{text: proto-h2}]
  - match: /proto/
    protocol: [https]
    pipeline: [{text: proto-https}]
  - match: /proto/
    pipeline: [{text: proto}]
  - match: "~ ^/user/(?P<id>[0-9]+)$"
    pipeline: [{text: user}]
  - match: "~ (?i)\\.PHP$"
    methods: [POST]
    pipeline: [{text: php}]
  - match: /
    pipeline: [{text: root}]
`

// A config's conditions and regular-expression patterns, on the wire:
// the route each request takes, and 404 or 405 where the routes of the
// most specific pattern take none.
func TestConfigMatchers(t *testing.T) {
	cfg, err := parseString(t, t.TempDir(), matchersConfig)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	for _, tt := range []struct {
		name   string
		raw    string // request line and fields, without the final CRLF
		status int
		body   string
	}{
		{"fallback", "GET /api/a HTTP/1.1\r\nHost: h", 200, "api"},
		{"header exact", "GET /api/a HTTP/1.1\r\nHost: h\r\nX-Version: 2", 200, "api-v2"},
		{"header exact, other value", "GET /api/a HTTP/1.1\r\nHost: h\r\nX-Version: 20", 200, "api"},
		{"header name any case", "GET /api/a HTTP/1.1\r\nHost: h\r\nx-version: 2", 200, "api-v2"},
		{"header regex", "GET /api/a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer abc", 200, "api-bearer"},
		{"header regex fails", "GET /api/a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ABC", 200, "api"},
		{"header on two lines is one list", "GET /api/a HTTP/1.1\r\nHost: h\r\nX-Version: 2\r\nX-Version: 2", 200, "api"},
		{"query value, another absent", "GET /api/a?x=1&format=json HTTP/1.1\r\nHost: h", 200, "api-json"},
		{"query value decoded", "GET /api/a?%66ormat=js%6Fn HTTP/1.1\r\nHost: h", 200, "api-json"},
		{"query absent fails", "GET /api/a?format=json&debug HTTP/1.1\r\nHost: h", 200, "api-debug"},
		{"query present", "GET /api/a?debug= HTTP/1.1\r\nHost: h", 200, "api-debug"},
		{"query malformed escape is no parameter", "GET /api/a?format=%zz HTTP/1.1\r\nHost: h", 200, "api"},
		{"query malformed value is sent", "GET /api/a?format=json&debug=% HTTP/1.1\r\nHost: h", 200, "api-debug"},
		{"query malformed name is no parameter", "GET /api/a?format=json&debu%zg=1 HTTP/1.1\r\nHost: h", 200, "api-json"},
		{"query name[] is the name: not absent", "GET /api/a?format=json&debug[]=1 HTTP/1.1\r\nHost: h", 200, "api-debug"},
		{"query name[key] is the name", "GET /api/a?format=json&debug[a]=1 HTTP/1.1\r\nHost: h", 200, "api-debug"},
		{"query name[] encoded is the name", "GET /api/a?format=json&debug%5B%5D=1 HTTP/1.1\r\nHost: h", 200, "api-debug"},
		{"query name[] with a value", "GET /api/a?format[]=json HTTP/1.1\r\nHost: h", 200, "api-json"},
		{"query name[ unclosed is another name", "GET /api/a?format=json&debug[=1 HTTP/1.1\r\nHost: h", 200, "api-json"},
		{"query name as a prefix is another name", "GET /api/a?format=json&debugx[]=1 HTTP/1.1\r\nHost: h", 200, "api-json"},
		{"present and absent", "GET /api/a HTTP/1.1\r\nHost: h\r\nX-Present: ", 200, "api-present"},
		{"present and absent, both sent", "GET /api/a HTTP/1.1\r\nHost: h\r\nX-Present: 1\r\nX-Absent: 1", 200, "api"},
		{"client not in the list: 404", "GET /internal/x HTTP/1.1\r\nHost: h", 404, ""},
		{"client through a trusted proxy", "GET /internal/x HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 203.0.113.9", 200, "internal-proxied"},
		{"client through a proxy, method not: 405", "DELETE /internal/x HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 203.0.113.9", 405, ""},
		{"client forwarded, untrusted list", "GET /internal/x HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 10.1.2.3", 404, ""},
		{"client", "GET /local/x HTTP/1.1\r\nHost: h", 200, "local"},
		{"protocol version", "GET /proto/x HTTP/1.0", 200, "proto-1.0"},
		{"protocol over plain TCP", "GET /proto/x HTTP/1.1\r\nHost: h", 200, "proto"},
		{"regex", "GET /user/42 HTTP/1.1\r\nHost: h", 200, "user"},
		{"regex does not match", "GET /user/4x HTTP/1.1\r\nHost: h", 200, "root"},
		{"regex case-insensitive", "POST /a/b.Php HTTP/1.1\r\nHost: h\r\nContent-Length: 0", 200, "php"},
		{"regex method: 405", "GET /a/b.php HTTP/1.1\r\nHost: h", 405, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := srv.RoundTrip(t, tt.raw+"\r\n\r\n")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tt.status, body)
			}
			if tt.body != "" && body != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
		})
	}

	// protocol: https holds over TLS, http/2 for HTTP/2.
	tlsSrv := sluicetest.NewTLSServer(t, cfg.Handler(), sluicetest.HTTP2())
	if resp, body := tlsSrv.RoundTrip(t, "GET /proto/x HTTP/1.1\r\nHost: h\r\n\r\n"); resp.StatusCode != 200 || body != "proto-https" {
		t.Errorf("over TLS: %d %q, want proto-https", resp.StatusCode, body)
	}
	resp, err := tlsSrv.Client().Get(tlsSrv.URL + "/proto/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || string(body) != "proto-h2" {
		t.Errorf("over HTTP/2: %s %q, want HTTP/2 and proto-h2", resp.Proto, body)
	}
}

// Conditions and regular expressions that cannot work are refused at
// their line and column, saying what to write.
func TestConfigMatcherErrors(t *testing.T) {
	for _, tt := range []struct {
		name, routes, want string
	}{
		{"bad regex", `
  - match: "~ ^/a("
    pipeline: [{text: a}]`, `test.yaml:2:12: match: regular expression "^/a(": error parsing regexp: missing closing )`},
		{"tilde without space", `
  - match: "~^/a"
    pipeline: [{text: a}]`, `2:12: match: "~^/a": a regular expression is written "~ "`},
		{"regex twice", `
  - match: "~ ^/a"
    pipeline: [{text: a}]
  - match: "~ ^/a"
    pipeline: [{text: b}]`, `4:12: match "~ ^/a" is already matched at 2:12`},
		{"two fallbacks", `
  - match: /a
    header: {X: "*"}
    pipeline: [{text: a}]
  - match: /a
    pipeline: [{text: b}]
  - match: /a
    pipeline: [{text: c}]`, `7:12: match "/a" is already matched at 5:12`},
		{"header name", `
  - match: /a
    header: {"X Y": "1"}
    pipeline: [{text: a}]`, `3:14: header: "X Y" is not a field name`},
		{"header regex", `
  - match: /a
    header: {X: "~ ("}
    pipeline: [{text: a}]`, `3:17: header X: regular expression "(": error parsing regexp`},
		{"header list", `
  - match: /a
    header: {X: [a, b]}
    pipeline: [{text: a}]`, `3:17: header X: want a value, "*" (sent, any value)`},
		{"header empty", `
  - match: /a
    header: {}
    pipeline: [{text: a}]`, `3:13: header: want a map of names to values`},
		{"client address", `
  - match: /a
    client: [10.0.0.0/33]
    pipeline: [{text: a}]`, `3:14: client: "10.0.0.0/33" is not an IP address or CIDR (write an address such as`},
		{"client key", `
  - match: /a
    client: {address: [10.0.0.0/8]}
    pipeline: [{text: a}]`, `unknown client key "address" (did you mean "addresses"?)`},
		{"client proxies", `
  - match: /a
    client: {addresses: [10.0.0.0/8], trusted_proxies: [nonsense]}
    pipeline: [{text: a}]`, `3:13: client: `},
		{"protocol", `
  - match: /a
    protocol: [h2]
    pipeline: [{text: a}]`, `3:16: protocol: "h2": write http/2`},
		{"protocol unknown", `
  - match: /a
    protocol: ftp
    pipeline: [{text: a}]`, `3:15: protocol: "ftp" is none of http, https, http/1.0, http/1.1, http/2, http/3`},
		{"protocol h3", `
  - match: /a
    protocol: [https, h3]
    pipeline: [{text: a}]`, `3:23: protocol: "h3": write http/3`},
		{"local port", `
  - match: /a
    local: [":0"]
    pipeline: [{text: a}]`, `3:13: local: ":0": port "0" is not a number from 1 to 65535 (write ":8080"`},
		{"local name", `
  - match: /a
    local: [":8080", "localhost:80"]
    pipeline: [{text: a}]`, `3:22: local: "localhost:80": "localhost" is not an IP address`},
		{"local empty", `
  - match: /a
    local: []
    pipeline: [{text: a}]`, `3:12: local: want the addresses requests arrive on, e.g. local: [":8080"`},
		{"method case", `
  - match: /a
    method: [get]
    pipeline: [{text: a}]`, `3:14: method: "get" is not a method: methods are case-sensitive (did you mean "GET"?)`},
		{"method empty", `
  - match: /a
    method: null
    pipeline: [{text: a}]`, `3:13: method: want one or more methods, e.g. method: [GET]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := parseString(t, dir, "routes:"+tt.routes+"\n")
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			msg := strings.ReplaceAll(err.Error(), filepath.Join(dir, "test.yaml"), "test.yaml")
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error\n%s\nwant one with\n%s", msg, tt.want)
			}
		})
	}
}

// FuzzQueryMatcher: for any query and name, a parameter is absent (null)
// exactly when it is not present ("*"), "name[]" spellings included, and
// a value test holds only when "*" does.
func FuzzQueryMatcher(f *testing.F) {
	for _, s := range [][2]string{{"debug[]=1", "debug"}, {"debug%5B%5D=1&x", "debug"}, {"debug[=1", "debug"},
		{"a[b][c]=1&a=2", "a"}, {"%zz=1&a", "a"}, {"a+b[x]=1", "a b"}, {"[]=1", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, q, name string) {
		r := &engine.Request{Query: []byte(q)}
		absent := (&queryMatcher{name, valueTest{absent: true}}).Match(r)
		present := (&queryMatcher{name, valueTest{any: true}}).Match(r)
		if absent == present {
			t.Fatalf("query %q, name %q: absent %v, present %v", q, name, absent, present)
		}
		if (&queryMatcher{name, valueTest{exact: "1"}}).Match(r) && !present {
			t.Fatalf("query %q, name %q: value 1 without being present", q, name)
		}
	})
}
