package components

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comp, err := NewRedirect(tt.opts)
			url := builtinServe(t, builtinComp(t, comp, err))
			host := tt.host
			if host == "" {
				host = "localhost"
			}
			resp, body := builtinRaw(t, url, "GET "+tt.target+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
			if resp.StatusCode != tt.status || resp.Header.Get("Location") != tt.loc {
				t.Fatalf("%d Location %q, want %d %q", resp.StatusCode, resp.Header.Get("Location"), tt.status, tt.loc)
			}
			if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(string(body), `<a href="`) {
				t.Errorf("note: %q %q", resp.Header.Get("Content-Type"), body)
			}
			if resp.ContentLength != int64(len(body)) {
				t.Errorf("Content-Length %d for %d bytes", resp.ContentLength, len(body))
			}
		})
	}
}

// The Location is escaped in the HTML note, and the pipeline stops.
func TestRedirectEscapesAndStops(t *testing.T) {
	comp, err := NewRedirect(RedirectOptions{To: `/go$query`})
	after, _ := NewText(TextOptions{Body: "not reached"})
	url := builtinServe(t, pipe.Chain{builtinComp(t, comp, err), after})
	resp, body := builtinRaw(t, url, "GET /?a=\"><script> HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 302 || strings.Contains(string(body), "<script>") || strings.Contains(string(body), "not reached") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	if !strings.Contains(string(body), "&#34;&gt;&lt;script&gt;") {
		t.Errorf("Location not escaped in %q", body)
	}
}

func TestRedirectOptionErrors(t *testing.T) {
	tests := []struct {
		opts RedirectOptions
		want string
	}{
		{RedirectOptions{}, "redirect: no target"},
		{RedirectOptions{To: "/x", Status: 200}, "redirect: status 200"},
		{RedirectOptions{To: "/x", Status: 304}, "redirect: status 304"},
		{RedirectOptions{To: "/$file"}, "redirect: unknown variable $file"},
		{RedirectOptions{To: "/$pathx"}, "redirect: unknown variable $pathx"},
		{RedirectOptions{To: "/$1"}, "redirect: unknown variable $"},
		{RedirectOptions{To: "/${path"}, "redirect: unclosed ${"},
		{RedirectOptions{To: "/a\r\nSet-Cookie: x"}, "redirect: target"},
	}
	for _, tt := range tests {
		if _, err := NewRedirect(tt.opts); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("NewRedirect(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

func ExampleNewRedirect() {
	moved, err := NewRedirect(RedirectOptions{To: "/blog$path$query", StripPrefix: "/news", Status: 301})
	if err != nil {
		panic(err)
	}
	_, url, stop := builtinListen(moved)
	defer stop()

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
