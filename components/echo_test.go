package components

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func TestEchoRaw(t *testing.T) {
	comp, err := NewEcho(EchoOptions{Max: 1000})
	url := sluicetest.NewServer(t, pipe.Handler(builtinComp(t, comp, err))).URL
	tests := []struct {
		name   string
		method string
		body   io.Reader
		hdr    []string
		status int
		want   string
		ctype  string
	}{
		{"POST", "POST", strings.NewReader("hello, echo"), []string{"Content-Type", "text/x-greeting"}, 200, "hello, echo", "application/octet-stream"},
		{"PUT binary", "PUT", bytes.NewReader([]byte{0, 1, 2, 255}), nil, 200, "\x00\x01\x02\xff", "application/octet-stream"},
		{"GET without body", "GET", nil, nil, 200, "", "application/octet-stream"},
		{"DELETE", "DELETE", strings.NewReader("gone"), nil, 200, "gone", "application/octet-stream"},
		{"at max", "POST", strings.NewReader(strings.Repeat("m", 1000)), nil, 200, strings.Repeat("m", 1000), "application/octet-stream"},
		{"over max", "POST", strings.NewReader(strings.Repeat("m", 1001)), nil, 413, "", ""},
		// A reader the client cannot measure is sent chunked.
		{"chunked", "POST", io.MultiReader(strings.NewReader("chunk"), strings.NewReader("ed")), nil, 200, "chunked", "application/octet-stream"},
		{"chunked over max", "POST", io.MultiReader(strings.NewReader(strings.Repeat("c", 600)), strings.NewReader(strings.Repeat("c", 600))), nil, 413, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := builtinDo(t, tt.method, url+"/echo", tt.body, tt.hdr...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tt.status, body)
			}
			if tt.status != 200 {
				return
			}
			if string(body) != tt.want || resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("got %q %q, want %q %q", resp.Header.Get("Content-Type"), body, tt.ctype, tt.want)
			}
			if resp.ContentLength != int64(len(tt.want)) || len(resp.TransferEncoding) > 0 {
				t.Errorf("framing: Content-Length %d, Transfer-Encoding %v", resp.ContentLength, resp.TransferEncoding)
			}
		})
	}
}

// A body sent as a page comes back as bytes no browser renders or sniffs
// into one: echo reflected the request's Content-Type, so a text/html
// body was a page running the sender's script on the server's origin.
func TestEchoIsNeverAPage(t *testing.T) {
	for _, format := range []string{"raw", "json"} {
		comp, err := NewEcho(EchoOptions{Format: format})
		url := sluicetest.NewServer(t, pipe.Handler(builtinComp(t, comp, err))).URL
		for _, ctype := range []string{"text/html", "text/html; charset=utf-8", "TEXT/HTML", "image/svg+xml",
			"application/xhtml+xml", "text/xml", "application/xml", "text/javascript", "multipart/x-mixed-replace; boundary=x", ""} {
			hdr := []string{"Content-Type", ctype}
			if ctype == "" {
				hdr = nil
			}
			const page = `<html><body><script>alert(document.domain)</script></body></html>`
			resp, body := builtinDo(t, "POST", url+"/echo", strings.NewReader(page), hdr...)
			want := map[string]string{"raw": "application/octet-stream", "json": "application/json"}[format]
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != want ||
				resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Content-Security-Policy") != "sandbox" {
				t.Errorf("%s, Content-Type %q: %d, Content-Type %q, X-Content-Type-Options %q, Content-Security-Policy %q; want 200, %s, nosniff, sandbox",
					format, ctype, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"),
					resp.Header.Get("Content-Security-Policy"), want)
			}
			if format == "raw" && string(body) != page {
				t.Errorf("raw, Content-Type %q: body %q, want the request's", ctype, body)
			}
		}
	}
}

// The json format reports the request exactly as it was received, every
// value base64-encoded.
func TestEchoJSON(t *testing.T) {
	comp, err := NewEcho(EchoOptions{Format: "json"})
	url := sluicetest.NewServer(t, pipe.Handler(builtinComp(t, comp, err))).URL
	raw := "PATCH /p%61th/x?q=1&r=%zz HTTP/1.1\r\n" +
		"host: Example.COM\r\n" +
		"X-Odd-Case:   spaced value  \r\n" +
		"X-Bytes: caf\xc3\xa9 \x80\r\n" +
		"X-Dup: 1\r\n" +
		"x-dup: 2\r\n" +
		"Transfer-Encoding: chunked\r\n" +
		"Connection: close\r\n" +
		"\r\n" +
		"5\r\nhello\r\n3\r\n\x00\xff!\r\n0\r\n\r\n"
	resp, body := sluicetest.RoundTrip(t, url, raw)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var got struct {
		Method, URI, Version, Body string
		Headers                    [][2]string
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	dec := func(s string) string {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("%q is not base64: %v", s, err)
		}
		return string(b)
	}
	if m, u, v, b := dec(got.Method), dec(got.URI), dec(got.Version), dec(got.Body); m != "PATCH" || u != "/p%61th/x?q=1&r=%zz" || v != "HTTP/1.1" || b != "hello\x00\xff!" {
		t.Errorf("method %q uri %q version %q body %q", m, u, v, b)
	}
	var hdrs []string
	for _, h := range got.Headers {
		hdrs = append(hdrs, dec(h[0])+": "+dec(h[1]))
	}
	want := []string{"host: Example.COM", "X-Odd-Case: spaced value", "X-Bytes: caf\xc3\xa9 \x80", "X-Dup: 1", "x-dup: 2",
		"Transfer-Encoding: chunked", "Connection: close"}
	if fmt.Sprintf("%q", hdrs) != fmt.Sprintf("%q", want) {
		t.Errorf("headers\n got %q\nwant %q", hdrs, want)
	}

	resp, body = sluicetest.RoundTrip(t, url, "GET / HTTP/1.0\r\n\r\n")
	if err := json.Unmarshal([]byte(body), &got); err != nil || dec(got.Version) != "HTTP/1.0" || len(got.Headers) != 0 || got.Body != "" {
		t.Errorf("HTTP/1.0: %d %s (%v)", resp.StatusCode, body, err)
	}
}

func TestEchoOptionErrors(t *testing.T) {
	for _, opts := range []EchoOptions{{Format: "xml"}, {Max: -1}} {
		if _, err := NewEcho(opts); err == nil || !strings.HasPrefix(err.Error(), "echo: ") {
			t.Errorf("NewEcho(%+v) error = %v", opts, err)
		}
	}
}

func ExampleNewEcho() {
	echo, err := NewEcho(EchoOptions{Format: "json"})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(echo))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

	req, _ := http.NewRequest("POST", url+"/hi?x=1", strings.NewReader("body"))
	req.Host = "example.com"
	req.Header = http.Header{"User-Agent": {"example"}}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var got struct {
		Method, URI, Version, Body []byte // base64 in JSON: decoded by encoding/json
		Headers                    [][2][]byte
	}
	json.NewDecoder(resp.Body).Decode(&got)
	fmt.Printf("%s %s %s\n", got.Method, got.URI, got.Version)
	for _, h := range got.Headers {
		fmt.Printf("%s: %s\n", h[0], h[1])
	}
	fmt.Printf("%s\n", got.Body)
	// Output:
	// POST /hi?x=1 HTTP/1.1
	// Host: example.com
	// User-Agent: example
	// Content-Length: 4
	// Accept-Encoding: gzip
	// body
}
