package components

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func TestHeadersResponse(t *testing.T) {
	hd, err := NewHeaders(HeadersOptions{
		Set:    map[string]string{"Content-Type": "text/markdown", "X-Frame-Options": "DENY", "Cache-Control": "no-cache"},
		Add:    map[string]string{"Link": "</style.css>; rel=preload", "X-Extra": "  trimmed  "},
		Remove: []string{"x-powered-by", "ETag"},
	})
	// The source sets fields in the content phase, as a net/http handler
	// does: headers still has the last word.
	source := pipe.FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Powered-By", "handler")
		w.Header().Set("ETag", `"1"`)
		w.Header().Add("Link", "</app.js>; rel=preload")
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write([]byte("# hi\n"))
	}))
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{builtinComp(t, hd, err), source})).URL
	resp, body := builtinDo(t, "GET", url+"/", nil)
	want := map[string]string{
		"Content-Type":    "text/markdown",
		"X-Frame-Options": "DENY",
		"Cache-Control":   "no-cache",
		"Link":            "</app.js>; rel=preload|</style.css>; rel=preload",
		"X-Extra":         "trimmed",
		"X-Powered-By":    "",
		"Etag":            "",
	}
	for name, v := range want {
		if got := strings.Join(resp.Header.Values(name), "|"); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	if string(body) != "# hi\n" {
		t.Errorf("body %q", body)
	}
}

// Response fields apply to errors later pipes answer with, too.
func TestHeadersOnErrors(t *testing.T) {
	hd, err := NewHeaders(HeadersOptions{Set: map[string]string{"Strict-Transport-Security": "max-age=63072000"}})
	deny := pipe.Pipe(func(c *pipe.Conn) bool { return c.Error(403, "no") })
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{builtinComp(t, hd, err), deny})).URL
	resp, _ := builtinDo(t, "GET", url+"/", nil)
	if resp.StatusCode != 403 || resp.Header.Get("Strict-Transport-Security") != "max-age=63072000" {
		t.Errorf("%d %q", resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
	}
}

// Request fields are changed for the components after headers: echo
// reports what it saw.
func TestHeadersRequest(t *testing.T) {
	hd, err := NewHeaders(HeadersOptions{
		RequestSet:    map[string]string{"X-Forwarded-Proto": "https", "X-Dup": "one", "Host": "internal.example"},
		RequestRemove: []string{"Cookie", "x-secret"},
		RequestAdd:    map[string]string{"x-dup": "two", "X-Keep": "added", "X-New": "new", "Cookie": "c=1"},
	})
	echo, _ := NewEcho(EchoOptions{Format: "json"})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{builtinComp(t, hd, err), echo})).URL
	// Several requests on one connection: the Fields slice is reused.
	for i := range 3 {
		resp, body := builtinDo(t, "GET", url+"/", nil,
			"Cookie", "a=1", "X-Dup", "a", "X-Dup", "b", "X-Secret", "s", "X-Keep", fmt.Sprint(i))
		var got struct{ Headers [][2][]byte }
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%d: %v %s", resp.StatusCode, err, body)
		}
		var lines []string
		for _, h := range got.Headers {
			if n := strings.ToLower(string(h[0])); n != "user-agent" && n != "accept-encoding" {
				lines = append(lines, string(h[0])+": "+string(h[1]))
			}
		}
		// Removed, then set, then added: an added field comes after
		// those of its name, which stay.
		want := fmt.Sprintf("[Host: internal.example X-Dup: one x-dup: two X-Keep: %d X-Keep: added X-Forwarded-Proto: https Cookie: c=1 X-New: new]", i)
		if fmt.Sprint(lines) != want {
			t.Errorf("request %d saw %v, want %s", i, lines, want)
		}
	}
}

func TestHeadersOptionErrors(t *testing.T) {
	tests := []struct {
		opts HeadersOptions
		want string
	}{
		{HeadersOptions{Set: map[string]string{"Bad Name": "x"}}, `headers: set: "Bad Name" is not a valid field name`},
		{HeadersOptions{Add: map[string]string{"": "x"}}, "headers: add: empty field name"},
		{HeadersOptions{Set: map[string]string{"Content-Length": "1"}}, "headers: set: Content-Length is set by the server"},
		{HeadersOptions{Add: map[string]string{"transfer-encoding": "gzip"}}, "headers: add: transfer-encoding is set by the server"},
		{HeadersOptions{Set: map[string]string{"X": "a\r\nInjected: 1"}}, "headers: set: value of X contains control characters"},
		{HeadersOptions{Remove: []string{"a:b"}}, `headers: remove: "a:b"`},
		{HeadersOptions{RequestSet: map[string]string{"X": "\x00"}}, "headers: request_set: value of X"},
		{HeadersOptions{RequestRemove: []string{"é"}}, `headers: request_remove: "é"`},
		{HeadersOptions{RequestAdd: map[string]string{"X": "a\nb"}}, "headers: request_add: value of X contains control characters"},
		{HeadersOptions{RequestAdd: map[string]string{"host": "b.example"}}, "headers: request_add: a request has one Host: set it with request_set"},
	}
	for _, tt := range tests {
		if _, err := NewHeaders(tt.opts); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("NewHeaders(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

func ExampleNewHeaders() {
	security, err := NewHeaders(HeadersOptions{
		Set:    map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"},
		Remove: []string{"X-Debug"},
	})
	if err != nil {
		panic(err)
	}
	page := pipe.Source(func(c *pipe.Conn) pipe.Content {
		c.Header().Set("X-Debug", "internal")
		c.Header().Set("Cache-Control", "max-age=3600")
		return nil
	})
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{security, page}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

	resp, err := http.Get(url + "/")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Printf("Cache-Control: %s\nX-Content-Type-Options: %s\nX-Debug: %q\n",
		resp.Header.Get("Cache-Control"), resp.Header.Get("X-Content-Type-Options"), resp.Header.Get("X-Debug"))
	// Output:
	// Cache-Control: no-store
	// X-Content-Type-Options: nosniff
	// X-Debug: ""
}
