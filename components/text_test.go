package components

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// builtinComp builds a component or fails the test.
func builtinComp(t testing.TB, comp pipe.Component, err error) pipe.Component {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return comp
}

// builtinDo sends one request (hdr holds name, value pairs) without the
// transport's transparent decompression and returns the response with
// its whole body.
func builtinDo(t testing.TB, method, url string, body io.Reader, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestText(t *testing.T) {
	tests := []struct {
		name   string
		opts   TextOptions
		method string
		status int
		ctype  string
		body   string
	}{
		{"defaults", TextOptions{Body: "Hello, world!\n"}, "GET", 200, "text/plain; charset=utf-8", "Hello, world!\n"},
		{"type and status", TextOptions{Body: `{"error":"gone"}`, ContentType: "application/json", Status: 410}, "GET", 410, "application/json", `{"error":"gone"}`},
		{"empty body", TextOptions{}, "GET", 200, "text/plain; charset=utf-8", ""},
		{"any method", TextOptions{Body: "posted"}, "POST", 200, "text/plain; charset=utf-8", "posted"},
		{"HEAD", TextOptions{Body: "twelve bytes"}, "HEAD", 200, "text/plain; charset=utf-8", ""},
		{"204", TextOptions{Status: 204}, "GET", 204, "text/plain; charset=utf-8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comp, err := NewText(tt.opts)
			url := sluicetest.NewServer(t, pipe.Handler(builtinComp(t, comp, err))).URL
			resp, body := builtinDo(t, tt.method, url+"/", nil)
			if resp.StatusCode != tt.status || string(body) != tt.body || resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("got %d %q %q, want %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.status, tt.ctype, tt.body)
			}
			wantCL := fmt.Sprint(len(tt.opts.Body))
			if tt.status == 204 {
				wantCL = ""
			}
			if got := resp.Header.Get("Content-Length"); got != wantCL {
				t.Errorf("Content-Length %q, want %q", got, wantCL)
			}
		})
	}
}

func TestTextOptionErrors(t *testing.T) {
	for _, opts := range []TextOptions{{Status: 99}, {Status: 600}, {Status: 304, Body: "x"}, {Status: 204, Body: "x"}} {
		if _, err := NewText(opts); err == nil || !strings.HasPrefix(err.Error(), "text: ") {
			t.Errorf("NewText(%+v) error = %v", opts, err)
		}
	}
}

// The text source allocates nothing per request beyond what the pipeline
// and engine do.
func BenchmarkText(b *testing.B) {
	comp, _ := NewText(TextOptions{Body: "Hello, world!\n"})
	builtinBench(b, comp)
}

func ExampleNewText() {
	hello, err := NewText(TextOptions{Body: "Hello, world!\n"})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(hello))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

	resp, err := http.Get(url + "/hello")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"), resp.ContentLength)
	fmt.Printf("%q\n", body)
	// Output:
	// 200 OK text/plain; charset=utf-8 14
	// "Hello, world!\n"
}
