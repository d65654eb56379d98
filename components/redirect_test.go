package components

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func TestRedirect(t *testing.T) {
	tests := []struct {
		name   string
		opts   RedirectOptions
		target string // request-target
		host   string
		status int
		loc    string
	}{
		{"fixed", RedirectOptions{To: "/new"}, "/old?x=1", "", 302, "/new"},
		{"path and query", RedirectOptions{To: "https://example.com$path$query", Status: 301}, "/a%20b/c?x=1&y", "", 301, "https://example.com/a%20b/c?x=1&y"},
		{"no query", RedirectOptions{To: "/n$path$query", Status: 308}, "/p", "", 308, "/n/p"},
		{"strip prefix", RedirectOptions{To: "/new$path$query", StripPrefix: "/old", Status: 307}, "/old/a/b?q", "", 307, "/new/a/b?q"},
		{"strip prefix not there", RedirectOptions{To: "/new$path", StripPrefix: "/old"}, "/other", "", 302, "/new/other"},
		{"host to https", RedirectOptions{To: "https://$host$path$query", Status: 301}, "/x?1", "www.example.org", 301, "https://www.example.org/x?1"},
		{"braces and dollar", RedirectOptions{To: "${path}x/$$5", Status: 303}, "/p", "", 303, "/px/$5"},
		{"strip prefix mid-segment", RedirectOptions{To: "/new$path", StripPrefix: "/old"}, "/older/x", "", 302, "/new/older/x"},
		{"strip prefix whole path", RedirectOptions{To: "$path$query", StripPrefix: "/old"}, "/old?q", "", 302, "/?q"},
		{"host with port", RedirectOptions{To: "https://$host$path"}, "/x", "www.example.org:8080", 302, "https://www.example.org:8080/x"},
		{"IPv6 host", RedirectOptions{To: "https://$host:8443$path"}, "/x", "[::1]", 302, "https://[::1]:8443/x"},
		{"hostname drops the port", RedirectOptions{To: "https://$hostname$path"}, "/x", "www.example.org:8080", 302, "https://www.example.org/x"},
		{"hostname, a new port", RedirectOptions{To: "http://$hostname:8080$path$query"}, "/x?a", "www.example.org:80", 302, "http://www.example.org:8080/x?a"},
		{"hostname without a port", RedirectOptions{To: "https://$hostname$path"}, "/x", "www.example.org", 302, "https://www.example.org/x"},
		{"hostname of IPv6", RedirectOptions{To: "https://${hostname}:8443$path"}, "/x", "[::1]:8080", 302, "https://[::1]:8443/x"},
		{"hostname of IPv6 without a port", RedirectOptions{To: "https://$hostname$path"}, "/x", "[2001:db8::1]", 302, "https://[2001:db8::1]/x"},
		{"escaped", RedirectOptions{To: "/n$path$query"}, "/a%25b/\\c\"d?e=%zz|f", "", 302, "/n/a%25b/%5Cc%22d?e=%25zz%7Cf"},
		{"path as a query value", RedirectOptions{To: "/login?next=$path"}, "/a%26admin=1/b", "", 302, "/login?next=%2Fa%26admin%3D1%2Fb"},
		{"canonical", RedirectOptions{To: "/n$path", StripPrefix: "/old"}, "//old/./x/../a%20b", "", 302, "/n/a%20b"},
		// A "/" of the target next to $path is not doubled.
		{"path then slash, directory", RedirectOptions{To: "$path/index.html"}, "/a/", "", 302, "/a/index.html"},
		{"path then slash, root", RedirectOptions{To: "$path/index.html"}, "/", "", 302, "/index.html"},
		{"path then slash, file", RedirectOptions{To: "$path/index.html"}, "/a", "", 302, "/a/index.html"},
		{"slash then path", RedirectOptions{To: "https://example.com/$path"}, "/a", "", 302, "https://example.com/a"},
		{"args after the query", RedirectOptions{To: "/x?a=1&$args"}, "/p?b=2", "", 302, "/x?a=1&b=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comp, err := NewRedirect(tt.opts)
			url := sluicetest.NewServer(t, pipe.Handler(builtinComp(t, comp, err))).URL
			host := tt.host
			if host == "" {
				host = "localhost"
			}
			resp, body := sluicetest.RoundTrip(t, url, "GET "+tt.target+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
			if resp.StatusCode != tt.status || resp.Header.Get("Location") != tt.loc {
				t.Fatalf("%d Location %q, want %d %q", resp.StatusCode, resp.Header.Get("Location"), tt.status, tt.loc)
			}
			if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(body, `<a href="`) {
				t.Errorf("note: %q %q", resp.Header.Get("Content-Type"), body)
			}
			if resp.ContentLength != int64(len(body)) {
				t.Errorf("Content-Length %d for %d bytes", resp.ContentLength, len(body))
			}
		})
	}
}

// What the request supplies is percent-encoded in the Location and so in
// the HTML note, whose markup it cannot break; the pipeline stops.
func TestRedirectEscapesAndStops(t *testing.T) {
	comp, err := NewRedirect(RedirectOptions{To: `/go$query`})
	after, _ := NewText(TextOptions{Body: "not reached"})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{builtinComp(t, comp, err), after})).URL
	resp, body := sluicetest.RoundTrip(t, url, "GET /?a=\"><script>'&b=\\ HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 302 || strings.Contains(body, "<script>") || strings.Contains(body, "not reached") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	const want = "/go?a=%22%3E%3Cscript%3E'&b=%5C"
	if loc := resp.Header.Get("Location"); loc != want {
		t.Errorf("Location %q, want %q", loc, want)
	}
	if !strings.Contains(body, `<a href="/go?a=%22%3E%3Cscript%3E&#39;&amp;b=%5C">`) {
		t.Errorf("Location not escaped in %q", body)
	}
}

// A Location built from the request never names another host: not
// through a path that starts with two slashes or their look-alikes
// (backslashes, encoded slashes, tabs and newlines browsers strip), not
// through a prefix stripped in mid-segment, not through an empty host.
// Every Location is checked as net/url and as a browser (browserResolve)
// resolve it against the request's URL.
func TestRedirectStaysOnHost(t *testing.T) {
	servers := map[string]string{}
	for name, opts := range map[string]RedirectOptions{
		"relative": {To: "$path$query", StripPrefix: "/redir2"},
		"slash":    {To: "/$path"},
		"absolute": {To: "https://example.com$path$query", StripPrefix: "/redir2"},
		"own host": {To: "https://$host$path$query"},
		"hostname": {To: "https://$hostname:8443$path$query"},
		"www":      {To: "https://www.$host$path"},
		"no slash": {To: "//cdn.example.com$path"},
	} {
		comp, err := NewRedirect(opts)
		servers[name] = sluicetest.NewServer(t, pipe.Handler(builtinComp(t, comp, err))).URL
	}
	// The hosts a Location may name: the request's for a relative To.
	allowed := map[string]string{"relative": "example.org", "slash": "example.org", "absolute": "example.com",
		"own host": "example.org", "hostname": "example.org", "www": "www.example.org", "no slash": "cdn.example.com"}
	targets := []string{
		"/redir2//evil.com/",
		"/redir2///evil.com/",
		`/redir2/\evil.com/`,
		`/redir2\evil.com/`,
		`/redir2/\/evil.com/`,
		`/redir2//\evil.com/`,
		"/redir2/%2F/evil.com/",
		"/redir2/%2f%2fevil.com/",
		"/redir2%2F%2Fevil.com/",
		"/redir2/%5C/evil.com/",
		"/redir2/%5c%5cevil.com/",
		"/redir2/%09/evil.com/",
		"/redir2/%0a/evil.com/",
		"/redir2/%0D%0A/evil.com/",
		"/redir2/%20/evil.com/",
		"//evil.com/",
		"///evil.com",
		`/\evil.com`,
		"/redir2@evil.com/",
		"/redir2.evil.com/",
		"/redir2:evil.com/",
		"/redir2",
		"/redir2?//evil.com",
		"/redir2//evil.com?a=\\b&c=\"<>`{|}^",
		"http://example.org//evil.com/",
		"http://example.org/redir2//evil.com/",
	}
	for _, name := range []string{"relative", "slash", "absolute", "own host", "hostname", "www", "no slash"} {
		for _, target := range targets {
			t.Run(name+" "+target, func(t *testing.T) {
				resp, _ := sluicetest.RoundTrip(t, servers[name], "GET "+target+" HTTP/1.1\r\nHost: example.org\r\n\r\n")
				if strings.Contains(strings.ToLower(target), "%2f") {
					// The engine refuses an encoded slash before routing.
					if resp.StatusCode != http.StatusBadRequest {
						t.Fatalf("GET %s: %d, want 400", target, resp.StatusCode)
					}
					return
				}
				if resp.StatusCode != http.StatusFound {
					t.Fatalf("GET %s: %d, want 302", target, resp.StatusCode)
				}
				checkLocation(t, target, resp.Header.Get("Location"), allowed[name])
			})
		}
	}
	// An HTTP/1.0 request may have no host: https://$host cannot be
	// built ("https:///evil.com" is evil.com to a browser).
	for _, name := range []string{"own host", "hostname"} {
		resp, _ := sluicetest.RoundTrip(t, servers[name], "GET //evil.com/ HTTP/1.0\r\n\r\n")
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("%s: HTTP/1.0 without Host: %d Location %q, want 400 without Location", name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

// checkLocation fails t unless loc, the Location answering target, is
// plain visible ASCII with nothing a browser would rewrite, and resolves
// (by net/url and as a browser does) to host.
func checkLocation(t *testing.T, target, loc, host string) {
	t.Helper()
	if loc == "" {
		t.Fatalf("GET %s: no Location", target)
	}
	if i := strings.IndexFunc(loc, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`\"<>^`+"`{|}", r) }); i >= 0 {
		t.Errorf("GET %s: Location %q has %q unescaped", target, loc, loc[i])
	}
	base, err := url.Parse("http://example.org" + strings.TrimPrefix(target, "http://example.org"))
	if err != nil {
		base, _ = url.Parse("http://example.org/")
	}
	for _, r := range []struct {
		who     string
		resolve func(*url.URL, string) (*url.URL, error)
	}{{"net/url", (*url.URL).Parse}, {"a browser", browserResolve}} {
		u, err := r.resolve(base, loc)
		if err != nil {
			t.Errorf("GET %s: Location %q: %s cannot resolve it: %v", target, loc, r.who, err)
		} else if !strings.EqualFold(u.Hostname(), host) {
			t.Errorf("GET %s: Location %q: %s resolves it to host %q, want %q", target, loc, r.who, u.Hostname(), host)
		}
	}
}

// browserResolve resolves loc against base (an http or https URL) as a
// browser does, with the rules of the WHATWG URL standard for special
// schemes (http, https, ws, wss, ftp, file) that RFC 3986 lacks: leading
// and trailing C0 controls and spaces are trimmed and tabs and newlines
// removed anywhere; '\' is '/' before the query; "//" at the start of a
// relative reference starts the authority after any number of slashes;
// and a special scheme other than the base's reads what follows its
// colon as an authority, slashes or not ("https:evil.com").
func browserResolve(base *url.URL, loc string) (*url.URL, error) {
	loc = strings.TrimFunc(loc, func(r rune) bool { return r <= ' ' })
	loc = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, loc)
	scheme, rest := "", loc
	if i := strings.IndexByte(loc, ':'); i > 0 && browserScheme(loc[:i]) {
		scheme, rest = strings.ToLower(loc[:i]), loc[i+1:]
	}
	switch scheme {
	case "", "http", "https", "ws", "wss", "ftp", "file":
	default:
		return base.Parse(loc)
	}
	end := strings.IndexAny(rest, "?#")
	if end < 0 {
		end = len(rest)
	}
	rest = strings.ReplaceAll(rest[:end], `\`, "/") + rest[end:]
	if strings.HasPrefix(rest, "//") || scheme != "" && scheme != base.Scheme {
		rest = "//" + strings.TrimLeft(rest, "/")
		if scheme != "" {
			rest = scheme + ":" + rest
		}
	}
	return base.Parse(rest)
}

// browserScheme reports whether s is a URL scheme: a letter, then
// letters, digits, '+', '-' and '.'.
func browserScheme(s string) bool {
	for i, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && ('0' <= c && c <= '9' || strings.ContainsRune("+-.", c))) {
			return false
		}
	}
	return true
}

func TestRedirectOptionErrors(t *testing.T) {
	tests := []struct {
		opts RedirectOptions
		want string
	}{
		{RedirectOptions{}, "redirect: no target"},
		{RedirectOptions{To: "/x", Status: 200}, "redirect: status 200"},
		{RedirectOptions{To: "/x", Status: 304}, "redirect: status 304"},
		{RedirectOptions{To: "/$"}, "redirect: a $ in \"/$\" starts no placeholder"},
		{RedirectOptions{To: "/$-x"}, "redirect: a $ in \"/$-x\" starts no placeholder"},
		{RedirectOptions{To: "/$0"}, "redirect: $0 in \"/$0\": path parameters are numbered from $1"},
		{RedirectOptions{To: "https://$1.example.com/"}, "redirect: ${1} is not allowed in the host"},
		{RedirectOptions{To: "/x$args"}, "redirect: $args in \"/x$args\" is the query without its"},
		{RedirectOptions{To: "/${path"}, "redirect: unclosed ${"},
		{RedirectOptions{To: "/a\r\nSet-Cookie: x"}, "redirect: target"},
		{RedirectOptions{To: "https:$path"}, `redirect: target "https:$path" has a scheme but no //host`},
		{RedirectOptions{To: "https:/example.com$path"}, "redirect: target \"https:/example.com$path\" has a scheme but no //host"},
		{RedirectOptions{To: "https://$path"}, `redirect: target "https://$path" names no host`},
		{RedirectOptions{To: "//$query"}, `redirect: target "//$query" names no host`},
		{RedirectOptions{To: "https:///x"}, `redirect: target "https:///x" names no host`},
		{RedirectOptions{To: "$host$path"}, "redirect: $host is allowed only in the host"},
		{RedirectOptions{To: "/$host$path"}, "redirect: $host is allowed only in the host"},
		{RedirectOptions{To: "https://example.com/$host"}, "redirect: $host is allowed only in the host"},
		{RedirectOptions{To: "/$hostname$path"}, "redirect: $hostname is allowed only in the host of a target with a scheme (https://$hostname$path)"},
		{RedirectOptions{To: `/a\b$path`}, "redirect: target \"/a\\\\b$path\" contains a backslash"},
		{RedirectOptions{To: " //evil.com"}, "redirect: target \" //evil.com\" starts or ends with a space"},
		{RedirectOptions{To: "/x?a=1$query"}, `redirect: $query in "/x?a=1$query" comes after the "?"`},
		{RedirectOptions{To: "/x?$query"}, `redirect: $query in "/x?$query" comes after the "?"`},
		{RedirectOptions{To: "/x", StripPrefix: "old"}, `redirect: strip_prefix "old" must start with /`},
		{RedirectOptions{To: "/x", StripPrefix: "/old/"}, `redirect: strip_prefix "/old/" must start with /`},
	}
	for _, tt := range tests {
		if _, err := NewRedirect(tt.opts); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("NewRedirect(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

// FuzzRedirectLocation checks the Location of any path, query and host
// against the rule of TestRedirectStaysOnHost: visible ASCII that a
// browser reads as the configured host, or the request's own for a
// relative To.
func FuzzRedirectLocation(f *testing.F) {
	for _, seed := range [][3]string{
		{"/old//evil.com/", "", "example.org"},
		{`/old/\/evil.com`, `a=\"<>`, "example.org:80"},
		{"/old/%2F%5c%09/evil.com", "", ""},
		{"/old@evil.com", "", "[::1]:8080"},
		{"*", "x", "a%C3%A9.example"},
		{"/old", "", "evil.com@x"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	type form struct {
		opts RedirectOptions
		host string // "" for the request's host
	}
	var rds []*redirect
	var hosts []string
	for _, fm := range []form{
		{RedirectOptions{To: "$path$query", StripPrefix: "/old"}, ""},
		{RedirectOptions{To: "/$path$query"}, ""},
		{RedirectOptions{To: "$query$path"}, ""},
		{RedirectOptions{To: "https://example.com$path$query", StripPrefix: "/old"}, "example.com"},
		{RedirectOptions{To: "https://$host$path"}, ""},
		{RedirectOptions{To: "//cdn.example.com$path"}, "cdn.example.com"},
	} {
		parts, err := redirectParse(fm.opts.To)
		if err != nil {
			f.Fatal(err)
		}
		absolute, err := redirectAbsolute(fm.opts.To, parts)
		if err != nil {
			f.Fatal(err)
		}
		rds = append(rds, &redirect{parts: parts, strip: fm.opts.StripPrefix, absolute: absolute})
		hosts = append(hosts, fm.host)
	}
	f.Fuzz(func(t *testing.T, path, query, host string) {
		r := &engine.Request{RawPath: []byte(path), Query: []byte(query), Host: []byte(host)}
		base, err := url.Parse("http://request.example/")
		if err != nil {
			t.Fatal(err)
		}
		for i, rd := range rds {
			b, ok := rd.location(r)
			if !ok {
				continue
			}
			want := hosts[i]
			switch {
			case want != "":
			case slices.ContainsFunc(rd.parts, func(p redirectPart) bool { return p.v == "host" }):
				u, err := url.Parse("https://" + host + "/")
				if err != nil {
					t.Fatalf("host %q was accepted, but net/url refuses it: %v", host, err)
				}
				want = u.Hostname()
			default:
				want = "request.example"
			}
			loc := string(b)
			if i := strings.IndexFunc(loc, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`\"<>^`+"`{|}", r) }); i >= 0 {
				t.Fatalf("To %v: Location %q has %q unescaped", rd.parts, loc, loc[i])
			}
			u, err := browserResolve(base, loc)
			if err != nil {
				continue // a browser will not follow it
			}
			if !strings.EqualFold(u.Hostname(), want) {
				t.Fatalf("To %v, path %q, query %q, host %q: Location %q is host %q to a browser, want %q", rd.parts, path, query, host, loc, u.Hostname(), want)
			}
		}
	})
}

func ExampleNewRedirect() {
	moved, err := NewRedirect(RedirectOptions{To: "/blog$path$query", StripPrefix: "/news", Status: 301})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(moved))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

	req, _ := http.NewRequest("GET", url+"/news/2024/hello?page=2", nil)
	resp, err := http.DefaultTransport.RoundTrip(req) // no client redirect following
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status)
	fmt.Println("Location:", resp.Header.Get("Location"))
	fmt.Print(string(body))
	// Output:
	// 301 Moved Permanently
	// Location: /blog/2024/hello?page=2
	// <!DOCTYPE html>
	// <title>301 Moved Permanently</title>
	// <p>Moved to <a href="/blog/2024/hello?page=2">/blog/2024/hello?page=2</a>.</p>
}
